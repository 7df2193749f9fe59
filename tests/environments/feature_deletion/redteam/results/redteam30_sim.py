import importlib.util, json, sys, collections, math, re
from pathlib import Path
sys.path.insert(0, '/work/wt/rt30/tests/environments/feature_deletion/redteam')
from harness import rows
spec = importlib.util.spec_from_file_location("fd_calls", "/work/wt/rt30/environments/feature_deletion/feature_deletion/_sandbox_files/fd_calls.py")
fd = importlib.util.module_from_spec(spec); spec.loader.exec_module(fd)
class Opaque:
    def __init__(self, tag): self.tag = tag
def other(tag, v, x):
    if tag == "callback":
        for key, ans in v["calls"]:
            note('cb_call', CUR[0])
            if ans and ans[0] == 'raise': note('cb_raise', CUR[0], ans)
        return Opaque(tag)
    if tag == 'fed': return v
    return Opaque(tag)
CUR = [None]
cnt = collections.Counter(); where = collections.defaultdict(set); ex = {}
def note(k, rid, x=None):
    cnt[k] += 1; where[k].add(rid)
    if x is not None and k not in ex: ex[k] = repr(x)[:80]
CTRL = re.compile(r'[\x00-\x08\x0e-\x1f\x7f]')
def feats(v, rid):
    stack = [(v, 0)]; seen = 0
    while stack and seen < 100000:
        x, d = stack.pop(); seen += 1; t = type(x)
        if isinstance(x, Opaque): continue
        if t.__name__ in ('dict_keys', 'dict_values', 'dict_items'): note('view:' + t.__name__, rid)
        if t is complex: note('complex', rid, x)
        if t is float and x == 0 and math.copysign(1, x) < 0: note('negzero', rid)
        if isinstance(x, str):
            s = str(x)
            if CTRL.search(s): note('ctrl', rid, s)
            if '\x1b' in s: note('esc', rid, s)
            if '\x00' in s: note('nul', rid, s)
        if isinstance(x, (bytes, bytearray)):
            if any(b >= 0x80 for b in x): note('highbytes', rid, x)
            continue
        if isinstance(x, str): continue
        if isinstance(x, (list, tuple, set, frozenset)) or isinstance(x, dict):
            items = list(x.keys()) if isinstance(x, dict) else list(x)
            nums = [i for i in items if type(i) in (int, float, bool, complex)]
            by = collections.defaultdict(set)
            for i in nums:
                try: by[i].add(type(i).__name__)
                except TypeError: pass
            if any(len(s) > 1 for s in by.values()): note('mixed_equal:' + ','.join(sorted(set().union(*[s for s in by.values() if len(s) > 1]))), rid, x)
        if fd._is_iterator(x): continue
        try:
            if isinstance(x, collections.abc.Mapping): items = list(x.keys()) + list(x.values())
            elif isinstance(x, (list, tuple, set, frozenset, collections.deque)): items = list(x)
            else: continue
        except Exception: continue
        for i in items[:50000]: stack.append((i, d + 1))
n = 0
path = Path(sys.argv[1]) if len(sys.argv) > 1 else None
R = rows(path) if path else rows()
for r in R:
    if not r.checks: continue
    CUR[0] = r.id
    for p in r.checks.programs:
        for st in p.steps:
            encs = list(st.get("args") or []) + [v for k, v in (st.get("kwargs") or [])]
            if st.get("kwargs"): note('kwargs_step', r.id)
            for enc in encs:
                if not isinstance(enc, list): continue
                try: v = fd.decode(enc, other)
                except Exception as e: note('decode_err:'+type(e).__name__, r.id); continue
                n += 1; feats(v, r.id)
print(n, len([r for r in R if r.checks]))
for k, c in sorted(cnt.items()):
    ws = sorted(where[k])
    print(f"{k}\t{c}\t{len(ws)}\t{[w.split(':',1)[1] for w in ws[:8]]}\t{ex.get(k, '')}")
