"""feature-deletion: rebuild a feature deleted from a real Python package (a verifiers v1 taskset).

Exports the taskset and its default harness (verifiers' chat loop over the task's tools only).
"""

from feature_deletion.harness import FeatureDeletionHarness
from feature_deletion.taskset import FeatureDeletionTaskset

__all__ = ["FeatureDeletionHarness", "FeatureDeletionTaskset"]
