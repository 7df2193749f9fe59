"""Bytes exchanged between sites per trained sample: Streaming DiLoCo vs a per-step all-reduce.

Two real torchft runs, each with a lighthouse and 2 site processes on 127.0.0.1 (gloo), the same
toy model (composer_prime.diloco.toy), the same inner steps and batch size:

  diloco:    sync_every = H, 2 fragments (Streaming DiLoCo)
  per-step:  sync_every = 1, 1 fragment: one full-model all-reduce after every inner step, the same
             payload a data-parallel gradient all-reduce sends each step

Bytes are what each site hands to the cross-site all-reduce (counted in DiLoCoSite), per trained
sample (one sample = one row of the batch; for an LM multiply samples by tokens per row, the
ratio is unchanged). Expect the ratio to be about H. The per-step arm is a bytes baseline only
(an outer Nesterov step after every inner step is not a tuned data-parallel optimizer), so only
the DiLoCo arm's held-out loss is reported.

    uv run python benchmarks/diloco_bytes.py [--inner-steps 48 --h 12]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import tomli_w

from composer_prime.diloco.lighthouse import start_lighthouse
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import spawn, stop


def run(tmp: Path, name: str, sync_every: int, fragments: int, inner_steps: int) -> dict:
    port = free_port()
    children = [start_lighthouse(f"127.0.0.1:{port}", 2, tmp / name / "logs")]
    try:
        for site in ("a", "b"):
            config = {"out": str(tmp / name / site), "outer_steps": inner_steps // sync_every * fragments,
                      "diloco": {"mode": "torchft", "site_id": site, "lighthouse": f"http://127.0.0.1:{port}",
                                 "sync_every": sync_every, "fragments": fragments}}
            path = tmp / name / f"{site}.toml"
            path.write_text(tomli_w.dumps(config))
            children.append(spawn(site, [sys.executable, "-m", "composer_prime.diloco.toy", "@", str(path)],
                                  tmp / name / "logs", env={"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}))
        while any(c.poll() is None for c in children[1:]):
            time.sleep(0.2)
        if any(c.poll() != 0 for c in children[1:]):
            raise RuntimeError([c.error_line() for c in children[1:]])
    finally:
        stop(children)
    return json.loads((tmp / name / "a" / "result.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inner-steps", type=int, default=48)
    parser.add_argument("--h", type=int, default=12, help="DiLoCo sync_every (a multiple of 2: 2 fragments).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        diloco = run(tmp, "diloco", args.h, 2, args.inner_steps)
        per_step = run(tmp, "per_step", 1, 1, args.inner_steps)
    d = diloco["bytes_allreduced"] / diloco["samples"]
    p = per_step["bytes_allreduced"] / per_step["samples"]
    print(json.dumps({
        "H": args.h, "fragments": 2, "inner_steps": diloco["inner_steps"], "samples_per_site": diloco["samples"],
        "diloco_bytes_per_sample": round(d, 2), "per_step_bytes_per_sample": round(p, 2),
        "ratio_per_step_over_diloco": round(p / d, 2),
        "diloco_heldout_loss": round(diloco["global_heldout_loss"], 4),
    }))


if __name__ == "__main__":
    main()
