import sys, json, collections
sys.path.insert(0, 'tests/environments/feature_deletion/redteam')
from harness import rows
from pathlib import Path
for r in rows(Path(sys.argv[1])):
    c = collections.Counter()
    for p in r.checks.programs:
        for st in p.steps:
            for enc in list(st.get("args") or []) + [v for k, v in (st.get("kwargs") or [])]:
                s = json.dumps(enc)
                if '"raising"' in s:
                    i = s.index('"raising"')
                    c[(st.get('fn', [None])[1] if isinstance(st.get('fn'), list) else st.get('op'), s[i:i+60])] += 1
    print(r.id, sum(c.values()))
    for k, v in list(c.items())[:20]: print('   ', v, k)
