import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # store_attacks.py is shared with tests/e2e
