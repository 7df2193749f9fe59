"""Placeholder until the taskset lands."""
