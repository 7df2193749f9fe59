"""reverse-text: the composer-prime quickstart environment (a verifiers v1 taskset)."""

from reverse_text.taskset import ReverseTextTaskset

__all__ = ["ReverseTextTaskset"]
