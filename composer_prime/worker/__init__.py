"""Volunteer workers: join a run, pull verified weights, sample rollouts, sign and upload them.

protocol.py     join / heartbeat messages between a worker and the run's coordinator
coordinator.py  the run side: admits workers with the join token, registers their keys, takes heartbeats
journal.py      crash-safe record of batches awaiting upload (no work lost or sent twice on restart)
serve.py        the coordinator as a process
main.py         `uv run worker @ configs/worker/<...>.toml`
"""
