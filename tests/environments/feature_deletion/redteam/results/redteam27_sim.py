import importlib.util, json, sys, collections, types, datetime, decimal, fractions, enum, math
sys.path.insert(0, '/work/wt/rt27/tests/environments/feature_deletion/redteam')
from harness import rows
spec = importlib.util.spec_from_file_location("fd_calls", "/work/wt/rt27/environments/feature_deletion/feature_deletion/_sandbox_files/fd_calls.py")
fd = importlib.util.module_from_spec(spec); spec.loader.exec_module(fd)

class Opaque:
    def __init__(self, tag): self.tag = tag
def other(tag, v, x):
    return Opaque(tag)
CONT = (list, tuple, dict, set, frozenset, collections.deque)
cnt = collections.Counter(); where = collections.defaultdict(set)
def note(k, rid):
    cnt[k] += 1; where[k].add(rid)
def feats(v, rid, top_kind):
    stack = [(v, 0)]; seen = 0
    while stack and seen < 100000:
        x, d = stack.pop(); seen += 1
        t = type(x)
        if isinstance(x, Opaque): note(f'opaque:{x.tag}@{d}', rid); continue
        if d == 0: note('top:' + t.__name__, rid)
        if t is float:
            if math.isnan(x): note('nan', rid)
            elif math.isinf(x): note('inf', rid)
            elif x == 0 and math.copysign(1, x) < 0: note('-0.0', rid)
            elif abs(x) > 1e15: note('hugefloat', rid)
        if t is int:
            if x < 0: note(f'negint@{min(d,2)}', rid)
            if x == 0: note('zero', rid)
        if t is bool: note(f'bool@{min(d,2)}', rid)
        if x is None: note(f'None@{min(d,2)}', rid)
        if t in (bytes, bytearray): note(f'{t.__name__}@{min(d,2)}', rid)
        if t in CONT or t in (collections.OrderedDict, collections.Counter, collections.defaultdict):
            if len(x) == 0: note(f'empty_{t.__name__}@{min(d,2)}', rid)
            if isinstance(x, (list, tuple)) and len(x) and all(type(i) is dict for i in x): note(f'list_of_dicts@{min(d,2)}', rid)
            if isinstance(x, (list, tuple)) and len(x) and any(type(i) in (list, dict, set) for i in x): note(f'unhashable_items@{min(d,2)}', rid)
            if isinstance(x, (list, tuple, set, frozenset)) and len({type(i) for i in x}) > 1: note(f'mixed@{min(d,2)}', rid)
        if isinstance(x, str):
            s = str(x)
            if s == '': note(f'emptystr@{min(d,2)}', rid)
            if s != s.strip() and s.strip(): note('padded', rid)
            if '\n' in s: note('newline', rid)
            if len(s) > 1 and s.isupper(): note('ALLCAPS', rid)
            if any(c.isdigit() for c in s) and any(c.isalpha() for c in s): note('alnum', rid)
            if len(s) > 2 and s.istitle(): note('Title', rid)
            if '"' in s: note('dquote', rid)
            if '\x00' in s: note('nul', rid)
            if any(0xD800 <= ord(c) <= 0xDFFF for c in s): note('surrogate', rid)
            if s.isspace(): note('allspace', rid)
            if any(ord(c) < 32 and c not in '\t\n\r\x0b\x0c' for c in s): note('ctrlchar', rid)
        if isinstance(x, (str, bytes, bytearray)): continue
        if t.__name__ not in ('list','tuple','dict','set','frozenset','int','float','str','bool','NoneType','bytes'):
            note('type:' + t.__module__ + '.' + t.__qualname__ + f'@{min(d,2)}', rid)
        try:
            if isinstance(x, collections.abc.Mapping):
                items = list(x.keys()) + list(x.values())
            elif isinstance(x, collections.abc.Iterable) and not fd._is_iterator(x):
                items = list(x)
            else:
                continue
        except Exception:
            continue
        for i in items[:50000]:
            stack.append((i, d + 1))

n = 0
for r in rows():
    if not r.checks: continue
    for pi, p in enumerate(r.checks.programs):
        for si, st in enumerate(p.steps):
            for k, enc in list(enumerate(st.get("args") or [])) + [(k, v) for k, v in (st.get("kwargs") or [])]:
                if not isinstance(enc, list): continue
                if isinstance(k, str): note('kwarg', r.id)
                try: v = fd.decode(enc, other)
                except Exception as e: note('decode_err', r.id); continue
                if fd._is_iterator(v): note('iter:' + type(v).__name__, r.id)
                n += 1
                feats(v, r.id, None)
print(n)
for k, c in sorted(cnt.items()):
    ws = sorted(where[k])
    print(f"{k}\t{c}\t{len(ws)}\t{[w.split(':',1)[1] for w in ws[:3]]}")
