import importlib.util, json, sys, collections, math, re
sys.path.insert(0, '/work/wt/rt28/tests/environments/feature_deletion/redteam')
from harness import rows
spec = importlib.util.spec_from_file_location("fd_calls", "/work/wt/rt28/environments/feature_deletion/feature_deletion/_sandbox_files/fd_calls.py")
fd = importlib.util.module_from_spec(spec); spec.loader.exec_module(fd)
class Opaque:
    def __init__(self, tag): self.tag = tag
def other(tag, v, x): return Opaque(tag)
cnt = collections.Counter(); where = collections.defaultdict(set)
def note(k, rid): cnt[k] += 1; where[k].add(rid)
FLOATTXT = re.compile(r"\s*[-+]?(\d+\.\d*|\.\d+|\d+[eE][-+]?\d+|\d+\.\d*[eE][-+]?\d+)\s*")
def feats(v, rid):
    stack = [(v, 0)]; seen = 0
    while stack and seen < 100000:
        x, d = stack.pop(); seen += 1; t = type(x)
        if isinstance(x, Opaque): note(f'opaque:{x.tag}', rid); continue
        if d == 0: note('top:' + t.__name__, rid)
        if fd._is_iterator(x): note('iter:' + t.__name__, rid)
        if t is float:
            if math.isinf(x): note('inf', rid)
            elif not math.isnan(x) and 'e' in repr(x): note('sci_float', rid)
            if not math.isnan(x) and not math.isinf(x) and x == int(x): note('integral_float', rid)
        if t is complex: note('complex', rid)
        if t.__module__ == 'operator' or t.__name__ in ('itemgetter','attrgetter','methodcaller'): note('opcallable:'+t.__name__, rid)
        if callable(x) and not isinstance(x, type): note('callable:' + t.__name__, rid)
        if isinstance(x, type): note('class_arg:' + x.__name__, rid)
        if isinstance(x, str):
            s = str(x)
            lat = [c for c in s if 0xa1 <= ord(c) <= 0xff and c != 'é']
            if lat: note('latin1', rid); [note('latin1:'+c, rid) for c in set(lat)]
            if FLOATTXT.fullmatch(s) and not re.fullmatch(r"-?\d+", s.strip()): note('floattext', rid)
            if len(s) > 1 and s.isdigit(): note('digittext', rid)
        if isinstance(x, (str, bytes, bytearray)): continue
        if isinstance(x, dict):
            for k in x:
                note('dictkey:' + type(k).__name__, rid)
        if isinstance(x, (list, tuple, set, frozenset)) and x:
            if any(isinstance(i, (list, tuple, set, dict)) and len(i) == 0 for i in x): note('holds_empty_container', rid)
            if all(type(i) is tuple and len(i) == 2 for i in x): note('pairs', rid)
            ts = {type(i) for i in x}
            if str in ts and int in ts: note('mixed_str_int', rid)
            if len(x) >= 3 and all(type(i) in (int, float) for i in x) and isinstance(x, (list, tuple)):
                if all(a > b for a, b in zip(x, x[1:])): note('descending', rid)
        if fd._is_iterator(x): continue
        try:
            if isinstance(x, collections.abc.Mapping): items = list(x.keys()) + list(x.values())
            elif isinstance(x, collections.abc.Iterable): items = list(x)
            else: continue
        except Exception: continue
        for i in items[:50000]: stack.append((i, d + 1))
n = 0
for r in rows():
    if not r.checks: continue
    for p in r.checks.programs:
        for st in p.steps:
            for k, enc in list(enumerate(st.get("args") or [])) + [(k, v) for k, v in (st.get("kwargs") or [])]:
                if not isinstance(enc, list): continue
                try: v = fd.decode(enc, other)
                except Exception as e: note('decode_err:'+type(e).__name__, r.id); continue
                n += 1; feats(v, r.id)
print(n, len([r for r in rows() if r.checks]))
for k, c in sorted(cnt.items()):
    ws = sorted(where[k])
    print(f"{k}\t{c}\t{len(ws)}\t{[w.split(':',1)[1] for w in ws[:4]]}")
