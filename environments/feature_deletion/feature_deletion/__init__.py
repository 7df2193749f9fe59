"""feature-deletion: rebuild a feature deleted from a real Python package (a verifiers v1 taskset).

Exports the taskset and its default harness (verifiers' chat loop over the task's tools only).
"""

__all__ = ["FeatureDeletionHarness", "FeatureDeletionTaskset"]


def __getattr__(name: str):
    # Imported on first use (PEP 562; verifiers' loader reads `__all__` through getattr): importing verifiers takes
    # ~10 s, which the grader's and the builder's processes (fd-validate, fd-build, grading) never need.
    if name == "FeatureDeletionHarness":
        from feature_deletion.harness import FeatureDeletionHarness

        return FeatureDeletionHarness
    if name == "FeatureDeletionTaskset":
        from feature_deletion.taskset import FeatureDeletionTaskset

        return FeatureDeletionTaskset
    raise AttributeError(f"module 'feature_deletion' has no attribute {name!r}")
