"""The run's coordinator for volunteer workers: its app (run side) and the wire protocol both sides speak."""
