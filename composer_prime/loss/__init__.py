"""RL losses: the PRIME-RL-compatible contract (types), the default loss (dppo), config resolution (registry)."""

from composer_prime.loss.types import LossFn, LossInputs, LossOutputs

__all__ = ["LossFn", "LossInputs", "LossOutputs"]
