"""feature-deletion: rebuild a feature deleted from a real Python package (a verifiers v1 taskset)."""

from feature_deletion.taskset import FeatureDeletionTaskset

__all__ = ["FeatureDeletionTaskset"]
