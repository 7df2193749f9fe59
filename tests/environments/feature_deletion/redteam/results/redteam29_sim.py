import importlib.util, json, sys, collections, math, re
from pathlib import Path
sys.path.insert(0, '/work/wt/rt29/tests/environments/feature_deletion/redteam')
from harness import rows
spec = importlib.util.spec_from_file_location("fd_calls", "/work/wt/rt29/environments/feature_deletion/feature_deletion/_sandbox_files/fd_calls.py")
fd = importlib.util.module_from_spec(spec); spec.loader.exec_module(fd)
class Opaque:
    def __init__(self, tag): self.tag = tag
def other(tag, v, x): return Opaque(tag)
cnt = collections.Counter(); where = collections.defaultdict(set); ex = {}
def note(k, rid, x=None):
    cnt[k] += 1; where[k].add(rid)
    if x is not None and k not in ex: ex[k] = repr(x)[:80]
NONASCII_AFTER = re.compile(r"[A-Za-z][^\x00-\x7f]")
def feats(v, rid):
    stack = [(v, 0, None)]; seen = 0
    while stack and seen < 100000:
        x, d, parent = stack.pop(); seen += 1; t = type(x)
        if isinstance(x, Opaque): note(f'opaque:{x.tag}', rid); continue
        if d == 0: note('top:' + t.__name__, rid)
        if fd._is_iterator(x):
            note('iter:' + t.__name__, rid)
            if d > 0: note('nested_iter:' + t.__name__, rid)
        if t is float and math.isfinite(x):
            if x == 0 and math.copysign(1, x) < 0: note('negzero', rid)
            if x != int(x) and (x * 2) != int(x * 2):
                note('nondyadic', rid, x)
                if 1e-3 <= abs(x) < 1e15: note('nondyadic_mid', rid, x)
                r = repr(x)
                if 'e' not in r and len(r.split('.')[1]) <= 2: note('price_like', rid, x)
            if x != int(x) and (x*2) == int(x*2): note('half', rid, x)
            if 2**53 < abs(x) < 1e16: note('bigfloat_noexp', rid, x)
        if isinstance(x, str):
            s = str(x)
            if NONASCII_AFTER.search(s): note('nonascii_after_ascii_letter', rid, s)
            if any(ord(c) > 127 for c in s): note('nonascii', rid)
            if re.search(r'[A-Za-z][\u00c0-\u00ff]', s): note('latin_in_word', rid, s)
            if re.search(r'[\u00c0-\u00ff][A-Za-z]', s): note('latin_then_ascii', rid, s)
            if re.search(r'[A-Za-z][\u00c0-\u00ff]', s) and re.search(r'(?<![A-Za-z])[\u00c0-\u00ff]', s) is None: note('latin_only_in_word', rid, s)
            if any(0xc0 <= ord(c) <= 0xde and c.isupper() for c in s): note('latin_upper', rid, s)
            if s and ord(s[0]) > 127 and s[0].isalpha(): note('nonascii_first', rid)
            if '\t' in s: note('tab', rid, s)
            if '\r\n' in s: note('crlf', rid, s)
            if s != s.strip() : note('padded_ws', rid, s)
        if isinstance(x, (str, bytes, bytearray)): continue
        if hasattr(x, '__dict__') and not isinstance(x, type) and not callable(x) and not fd._is_iterator(x):
            note('hasdict:' + t.__name__, rid)
        if isinstance(x, dict):
            for k in x:
                if type(k) is tuple:
                    note('tuplekey', rid)
                    note('tuplekey:' + t.__name__ + ':' + ','.join(type(i).__name__ for i in k), rid, k)
        if isinstance(x, (list, tuple, set, frozenset)) and x:
            if all(isinstance(i, dict) for i in x): note('list_of_dicts', rid)
            if d > 0 and all(isinstance(i, (list, tuple)) for i in x): pass
        if fd._is_iterator(x): continue
        try:
            if isinstance(x, collections.abc.Mapping): items = list(x.keys()) + list(x.values())
            elif isinstance(x, collections.abc.Iterable): items = list(x)
            else: continue
        except Exception: continue
        for i in items[:50000]: stack.append((i, d + 1, t))
n = 0
path = Path(sys.argv[1]) if len(sys.argv) > 1 else None
R = rows(path) if path else rows()
for r in R:
    if not r.checks: continue
    for p in r.checks.programs:
        for st in p.steps:
            for k, enc in list(enumerate(st.get("args") or [])) + [(k, v) for k, v in (st.get("kwargs") or [])]:
                if not isinstance(enc, list): continue
                try: v = fd.decode(enc, other)
                except Exception as e: note('decode_err:'+type(e).__name__, r.id); continue
                n += 1; feats(v, r.id)
print(n, len([r for r in R if r.checks]))
for k, c in sorted(cnt.items()):
    ws = sorted(where[k])
    print(f"{k}\t{c}\t{len(ws)}\t{[w.split(':',1)[1] for w in ws[:5]]}\t{ex.get(k, '')}")
