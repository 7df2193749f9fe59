import importlib.util, json, sys, collections, pickle, types, datetime, decimal, fractions, enum, math
sys.path.insert(0, '/work/wt/rt26/tests/environments/feature_deletion/redteam')
from harness import rows
spec = importlib.util.spec_from_file_location("fd_calls", "/work/wt/rt26/environments/feature_deletion/feature_deletion/_sandbox_files/fd_calls.py")
fd = importlib.util.module_from_spec(spec); spec.loader.exec_module(fd)

class Opaque:
    def __init__(self, tag): self.tag = tag
def other(tag, v, x):
    return Opaque(tag)
BUILTIN_DATA = (int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, range, type(None))
STD = (decimal.Decimal, fractions.Fraction, datetime.date, datetime.time, datetime.timedelta, datetime.tzinfo)
cnt = collections.Counter(); where = collections.defaultdict(set)
def note(k, rid):
    cnt[k] += 1; where[k].add(rid)
def feats(v, rid):
    stack = [(v, 0)]; seen = 0
    while stack and seen < 100000:
        x, d = stack.pop(); seen += 1
        t = type(x)
        if isinstance(x, Opaque): note('opaque:' + x.tag, rid); continue
        if isinstance(x, datetime.datetime) and x.tzinfo is not None: note('aware_datetime', rid)
        if isinstance(x, datetime.time): note('time', rid)
        if isinstance(x, datetime.datetime): note('datetime', rid)
        if isinstance(x, enum.Enum): note('enum:' + ('int' if isinstance(x, int) else 'str' if isinstance(x, str) else 'plain'), rid)
        if t is float and math.isnan(x): note('nan', rid)
        if t is complex: note('complex', rid)
        if t is object: note('bare_object', rid)
        if isinstance(x, str):
            s = str(x)
            for mark in ('@', '://', '/', '\\', '%', '$', '{', '<', '=', '\x00', '\ufeff', '\u200b'):
                if mark in s: note('text' + repr(mark), rid)
        if not isinstance(x, BUILTIN_DATA + STD + (enum.Enum,)) and not callable(x) and not hasattr(x, '__iter__') and not hasattr(x, '__len__'):
            note('plainobj:' + t.__module__ + '.' + t.__qualname__, rid)
        if isinstance(x, tuple) and hasattr(t, '_fields'): note('namedtuple', rid)
        if isinstance(x, (str, bytes, bytearray)): continue
        try:
            if isinstance(x, collections.abc.Mapping) or (hasattr(x, 'items') and hasattr(x, 'keys')):
                items = list(x.keys()) + list(x.values())
            elif isinstance(x, (collections.abc.Iterable)) and not fd._is_iterator(x) and not isinstance(x, (types.GeneratorType,)):
                items = list(x)
            else:
                continue
        except Exception:
            continue
        for i in items[:50000]:
            stack.append((i, d + 1))

n = 0; errs = collections.Counter()
for r in rows():
    if not r.checks: continue
    for pi, p in enumerate(r.checks.programs):
        for si, st in enumerate(p.steps):
            args = list(enumerate(st.get("args") or [])) + [(k, v) for k, v in (st.get("kwargs") or [])]
            for k, enc in args:
                if not isinstance(enc, list): continue
                try:
                    v = fd.decode(enc, other)
                except Exception as e:
                    errs[repr(e)[:60]] += 1; continue
                if isinstance(v, types.GeneratorType) or fd._is_iterator(v):
                    try: v = list(v)
                    except Exception: pass
                n += 1
                feats(v, r.id)
print(n, errs.most_common(5))
for k, c in sorted(cnt.items()):
    ws = sorted(where[k])
    print(k, c, len(ws), ws[:4])
