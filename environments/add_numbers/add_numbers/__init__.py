"""add-numbers: add a one-digit number to a two-digit one (a verifiers v1 taskset)."""

from add_numbers.taskset import AddNumbersTaskset

__all__ = ["AddNumbersTaskset"]
