"""Volunteer workers: join a run, pull verified weights, sample rollouts, sign and upload them.
The run side (coordinator app, wire protocol) is composer_prime/coordinator/.

journal.py      crash-safe record of batches awaiting upload (no work lost or sent twice on restart)
main.py         `uv run worker @ configs/worker/<...>.toml`
"""
