"""A whole decentralised run on 127.0.0.1, every part a real process (tests/e2e and benchmarks/decentralised.py).

`LocalRun(root, sites=2, ...)`: a seaweedfs S3 server with one identity per run role (each process gets
only its role's key: broadcast/store_roles.py; workers get none), a torchft lighthouse (2 sites), the trainer
sites (site "a" leads: trains shard 0 from `root/run`, publishes versions there; site "b" fetches
shard 1 of every step from the store), broadcast.watch into the
store, an origin and a relay, the orchestrator in workers mode (requiring TOPLOC proofs with
`toploc=True`), and the workers (`start_worker`).
Start the trainers, publisher, servers and orchestrator with `start()`, stop everything with `stop()`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx
import tomli_w

from composer_prime import keys
from composer_prime.coordinator.protocol import worker_id
from local_s3 import start_local_s3
from composer_prime.diloco.lighthouse import start_lighthouse
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import Child, spawn, stop

REPO = Path(__file__).resolve().parents[2]
WARMSTART = REPO / "configs" / "quickstart" / "warmstart"
TOKEN = "e2e-join-token"
ROLES = ("orchestrator", "coordinator", "publisher", "origin", "site_b")
GRANT_TTL_S = 5  # short, so the e2e can replay an expired grant; a worker PUTs right after its grant
MAX_BATCH_BYTES = 4 * 2**20


def _toml(path: Path, config: dict) -> Path:
    path.write_text(tomli_w.dumps(config))
    return path


class LocalRun:
    def __init__(self, root: Path, steps: int, sites: int = 2, seed: int = 0, batch_size: int = 64,
                 toploc: bool = False):
        self.root, self.steps, self.sites, self.seed, self.batch_size = root, steps, sites, seed, batch_size
        self.toploc = toploc
        self.logs, self.run = root / "logs", root / "run"
        self.s3 = start_local_s3(root / "s3", bucket="run", roles=ROLES)
        self.env = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
        self.store = {"url": "s3://run", "endpoint_url": self.s3.endpoint_url}
        self.run_key = keys.load_or_create_private_key(root / "run.key")
        self.step_key = keys.load_or_create_private_key(root / "step.key")  # the orchestrator's step seal
        self.lighthouse_port, origin_port, relay_port, coordinator_port = (free_port() for _ in range(4))
        self.origin_port, self.relay_port, self.coordinator_port = origin_port, relay_port, coordinator_port
        self.origin, self.relay = f"http://127.0.0.1:{origin_port}", f"http://127.0.0.1:{relay_port}"
        self.run_url = f"http://127.0.0.1:{coordinator_port}"
        self.children: list[Child] = []
        self.trainers: dict[str, Child] = {}

    def spawn(self, name: str, argv: list[str], roles: tuple[str, ...] = ()) -> Child:
        """Start a process holding the store keys of `roles` only (none: a volunteer)."""
        env = {**self.env, **{k: v for role in roles for k, v in self.s3.role_env(role).items()}}
        child = spawn(name, [sys.executable, *argv], self.logs, env=env)
        self.children.append(child)
        return child

    def site_out(self, name: str) -> Path:
        return self.run if name == "a" else self.root / name

    def trainer_config(self, name: str) -> Path:
        shard = "ab".index(name)
        config = {
            "model": {"path": str(WARMSTART)}, "output_dir": str(self.site_out(name)), "max_steps": self.steps,
            "seed": self.seed, "num_threads": 1, "optim": {"lr": 1e-3, "max_norm": 1.0}, "keep_weight_versions": 8,
            "batch_timeout_s": 600.0, "ckpt": {"interval": 4, "keep_last": 2}, "log": {"progress": False},
            "publish_weights": shard == 0, "data": {"shard": shard, "shards": self.sites},
        }
        # The lead site shares the orchestrator's disk; the others fetch their shard from the store.
        config["data"] |= {"dir": str(self.run)} if shard == 0 else {"store": {**self.store, "role": f"site_{name}"}, "step_public_key": keys.public_hex(self.step_key)}
        if self.sites > 1:
            # Few inner steps per sync: plain averaging, not DiLoCo's momentum (composer_prime/configs/diloco.py).
            config["diloco"] = {"mode": "torchft", "site_id": name, "lighthouse": f"http://127.0.0.1:{self.lighthouse_port}",
                                "sync_every": 2, "fragments": 2, "min_replicas": 2, "timeout_s": 120.0,
                                "outer": {"lr": 1.0, "momentum": 0.0, "nesterov": False}}
        return _toml(self.root / f"site-{name}.toml", config)

    def start_trainer(self, name: str, log_name: str | None = None) -> Child:
        child = self.spawn(log_name or f"site-{name}",
                           ["-m", "composer_prime.trainer.main", "@", str(self.trainer_config(name))],
                           roles=() if name == "a" else (f"site_{name}",))
        self.trainers[name] = child
        return child

    def start(self) -> None:
        if self.sites > 1:
            self.children.append(start_lighthouse(f"127.0.0.1:{self.lighthouse_port}", 2, self.logs))
        for name in "ab"[: self.sites]:
            self.start_trainer(name)
        broadcasts = {**self.store, "url": "s3://run/broadcasts"}
        self.spawn("watch", ["-m", "composer_prime.broadcast.watch", "@", str(_toml(self.root / "watch.toml", {
            "output_dir": str(self.run), "store": {**broadcasts, "role": "publisher"}, "run_key": str(self.root / "run.key"),
            "poll_s": 0.3, "keep_last": 8}))], roles=("publisher",))
        self.spawn("origin", ["-m", "composer_prime.broadcast.serve", "@", str(_toml(self.root / "origin.toml", {
            "role": "origin", "port": self.origin_port, "store": {**broadcasts, "role": "origin"}}))], roles=("origin",))
        self.spawn("relay", ["-m", "composer_prime.broadcast.serve", "@", str(_toml(self.root / "relay.toml", {
            "role": "relay", "port": self.relay_port, "upstreams": [self.origin],
            "cache_dir": str(self.root / "relay-cache"), "run_public_key": keys.public_hex(self.run_key)}))])
        self.spawn("orchestrator", ["-m", "composer_prime.orchestrator.main", "@", str(_toml(self.root / "orch.toml", {
            "model": {"path": str(WARMSTART)}, "output_dir": str(self.run), "max_steps": self.steps, "seed": self.seed,
            "batch_size": self.batch_size, "group_size": 8, "seq_len": 512, "micro_batch_rows": 4,
            "train_world_size": self.sites, "async_level": 1, "max_off_policy_steps": 3, "env": {"id": "reverse-text"},
            "eval": {"num_examples": 0}, "sampling": {"temperature": 1.0, "max_tokens": 16},
            "advantage": {"std_normalize": True}, "log": {"progress": False}, "source": "workers",
            "step_store": {**self.store, "role": "orchestrator"}, "step_key": str(self.root / "step.key"),
            "workers": {"port": self.coordinator_port, "join_token": TOKEN, "run_key": str(self.root / "run.key"),
                        "store": {**self.store, "role": "coordinator"}, "broadcast_servers": [self.relay, self.origin],
                        "prompts_per_batch": 4, "poll_s": 0.3, "verify": self.verify_config(),
                        "uploads": {"grant_ttl_s": GRANT_TTL_S, "max_bytes": MAX_BATCH_BYTES}},
        }))], roles=("orchestrator", "coordinator"))

    def verify_config(self) -> dict:
        # The ban comes after the malicious worker's first three counted attacks (32 samples each), so each
        # of those meets its own check first (tests/worker/malicious.py).
        config = {"max_staleness": 3, "ban_min_samples": 96}
        if self.toploc:
            config["toploc"] = {"check_fraction": 1.0}
        return config

    def worker_id(self, name: str) -> str:
        """The id a worker started by `start_worker(name)` has in the run (its key is made here, first)."""
        return worker_id(name, keys.public_hex(keys.load_or_create_private_key(self.root / name / "worker.key")))

    def start_worker(self, name: str, seed: int = 0) -> Child:
        # One batch of 32 samples per worker and version: two honest workers fill a step of 64 on fresh weights.
        return self.spawn(name, ["-m", "composer_prime.worker.main", "@", str(_toml(self.root / f"{name}.toml", {
            "run_url": self.run_url, "join_token": TOKEN, "name": name, "state_dir": str(self.root / name),
            "run_public_key": keys.public_hex(self.run_key), "heartbeat_s": 0.5, "num_threads": 1, "retry_s": 0.5,
            "max_batches_per_version": 1, "seed": seed}))])

    def wait(self, what: str, condition, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            dead = [c for c in self.children if c.poll() not in (None, 0)]
            assert not dead, f"{what}: {[(c.name, c.log_tail(15)) for c in dead]}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.2)

    def workers(self) -> dict:
        """The coordinator's registry summary ({} while it is not up yet)."""
        try:
            return httpx.get(f"{self.run_url}/workers", timeout=5).json()
        except httpx.HTTPError:
            return {}

    def origin_versions(self) -> list[int]:
        try:
            return httpx.get(f"{self.origin}/versions", timeout=5).json()
        except httpx.HTTPError:
            return []

    def trainers_done(self) -> bool:
        return all(child.poll() == 0 for child in self.trainers.values())

    def stop(self) -> None:
        stop(self.children)
        self.s3.stop()
