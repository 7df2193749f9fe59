"""Suite-wide: GPU tests skip, rather than fail, on machines without CUDA (`-m` on the command line
replaces the default `-m 'not gpu'`, so they can be collected on CPU machines)."""

import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
