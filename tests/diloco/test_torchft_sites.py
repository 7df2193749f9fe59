"""torchft Streaming DiLoCo between 2 site processes and a lighthouse, all on 127.0.0.1 (gloo)."""

from __future__ import annotations

import json
import time

import pytest
import torch
from safetensors.torch import load_file

from composer_prime.utils.net import free_port
from composer_prime.diloco.lighthouse import start_lighthouse
from composer_prime.utils.processes import stop

pytestmark = pytest.mark.slow

OUTER = 12  # fragment syncs: 2 fragments, so each fragment syncs 6 times


def _site(tmp_path, name: str, lighthouse: str, out: str) -> dict:
    return {"out": str(tmp_path / out), "outer_steps": OUTER,
            "diloco": {"mode": "torchft", "site_id": name, "lighthouse": lighthouse, "sync_every": 6, "fragments": 2,
                       "fragment_sync_delay": 1, "min_replicas": 2, "timeout_s": 60.0}}


def _wait(children, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while any(c.poll() is None for c in children):
        assert time.monotonic() < deadline, [c.log_tail(3) for c in children]
        time.sleep(0.2)


def test_two_sites_agree_and_a_killed_site_rejoins_and_heals(tmp_path, run_site):
    port = free_port()
    lighthouse = start_lighthouse(f"127.0.0.1:{port}", 2, tmp_path / "logs")
    url = f"http://127.0.0.1:{port}"
    a = run_site("site-a", _site(tmp_path, "a", url, "a"))
    b = run_site("site-b", _site(tmp_path, "b", url, "b"))
    children = [lighthouse, a, b]
    try:
        # Kill b once a few fragment syncs committed, then start it again from scratch.
        deadline = time.monotonic() + 180
        progress = tmp_path / "b" / "progress"
        while not (progress.is_file() and int(progress.read_text() or 0) >= 4):
            assert time.monotonic() < deadline and b.poll() is None, b.log_tail(5)
            time.sleep(0.05)
        stop([b], grace_s=0)
        b2 = run_site("site-b-restarted", _site(tmp_path, "b", url, "b2"))
        children.append(b2)
        _wait([a, b2], 240)
        assert a.poll() == 0 and b2.poll() == 0, [a.error_line(), b2.error_line()]
    finally:
        stop(children)
    ra, rb = (json.loads((tmp_path / s / "result.json").read_text()) for s in ("a", "b2"))
    assert ra["outer_steps"] == rb["outer_steps"] == OUTER
    # Healed, not retrained: the restarted site joined at the quorum's step with fewer inner steps of its own.
    assert rb["inner_steps"] < ra["inner_steps"]
    assert "healing is required" in (tmp_path / "logs" / "site-b-restarted.log").read_text()
    ga, gb = (load_file(str(tmp_path / s / "global.safetensors")) for s in ("a", "b2"))
    assert ga.keys() == gb.keys() and all(torch.equal(ga[k], gb[k]) for k in ga)  # bit-identical global model
    assert ra["global_heldout_loss"] < ra["start_loss"]  # and it learned
