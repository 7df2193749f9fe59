"""sort-numbers: sort a short list of digits (a verifiers v1 taskset)."""

from sort_numbers.taskset import SortNumbersTaskset

__all__ = ["SortNumbersTaskset"]
