"""Trace replay with N teachers: ingest real traces, ask teachers at each step, keep the steps
where k of them agree on an action other than the student's, and write preference pairs
(composer_prime.pairs) for the trainer's preference channel. `uv run replay @ configs/replay/<x>.toml`.
"""
