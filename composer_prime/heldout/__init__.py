"""Held-out evaluation (pass@k, the task's verdict, the run's headline): used during rl and by `eval`."""
