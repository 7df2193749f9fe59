"""The package's layers: which packages may not import which, read from the source with `ast`.

Every import counts, also one inside a function (a lazy import is still a dependency). To add a rule,
add a row to LAYERS: a package under composer_prime and the packages it must not import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "composer_prime"

LAYERS: dict[str, tuple[str, ...]] = {
    # Shared layers import nothing above them.
    "rollout": ("orchestrator", "trainer", "eval", "worker", "heldout", "coordinator"),
    "heldout": ("orchestrator", "trainer", "eval", "worker", "coordinator"),
    "coordinator": ("orchestrator", "trainer", "eval", "worker"),
    # The server samples for every process above it: it knows tool-call text (tool_calls.py), not rollouts.
    "inference": ("rollout", "orchestrator", "trainer", "eval", "worker", "heldout", "coordinator"),
    # The processes that sample import each other in no direction.
    "orchestrator": ("eval", "worker"),
    "eval": ("orchestrator", "worker"),
    "worker": ("orchestrator", "eval"),
}


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative ones resolved."""
    package = list(path.relative_to(root.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found += [(node.lineno, f"{module}.{alias.name}" if not node.module else module) for alias in node.names]
    return found


def violations(root: Path, layers: dict[str, tuple[str, ...]]) -> list[str]:
    out = []
    for layer, forbidden in layers.items():
        for path in sorted((root / layer).rglob("*.py")):
            for line, module in imported_modules(path, root):
                parts = module.split(".")
                if parts[0] == root.name and len(parts) > 1 and parts[1] in forbidden:
                    out.append(f"{path.relative_to(root.parent)}:{line} imports {module} ({layer} must not import {parts[1]})")
    return out


def test_no_layer_imports_what_it_must_not():
    assert violations(PACKAGE, LAYERS) == []


def test_every_layer_in_the_table_exists():
    assert [layer for layer in LAYERS if not (PACKAGE / layer / "__init__.py").is_file()] == []


def test_the_walk_finds_absolute_relative_and_lazy_imports(tmp_path):
    root = tmp_path / "composer_prime"
    for package in ("rollout", "orchestrator"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "rollout" / "a.py").write_text("from composer_prime.orchestrator.main import x\n")
    (root / "rollout" / "b.py").write_text("def f():\n    import composer_prime.orchestrator\n")
    (root / "rollout" / "c.py").write_text("from ..orchestrator import main\nfrom . import sibling\n")
    (root / "rollout" / "ok.py").write_text("from composer_prime.rollout import a\nimport numpy\n")
    found = violations(root, {"rollout": ("orchestrator",)})
    assert [v.split(" ")[0] for v in found] == ["composer_prime/rollout/a.py:1", "composer_prime/rollout/b.py:2",
                                                "composer_prime/rollout/c.py:1"]
