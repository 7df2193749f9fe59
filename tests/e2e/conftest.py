import sys
from pathlib import Path

# cluster.py is shared with benchmarks/decentralised.py; store_attacks.py with tests/worker.
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "worker")]
