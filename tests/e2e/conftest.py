import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # cluster.py is shared with benchmarks/decentralised.py
