"""RL losses: the PRIME-RL-compatible contract (types), the default loss (dppo), config resolution (resolve)."""

from composer_prime.loss.types import LossFn, LossInputs, LossOutputs

__all__ = ["LossFn", "LossInputs", "LossOutputs"]
