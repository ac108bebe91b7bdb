"""The layering contract of docs/architecture.md, checked over every import statement.

Every `import` in `perfsuite/` and `analyzers/` is read with `ast`, function-level ones
included, and mapped to its layer. A module may import its own unit and the layers below it;
units that share a layer are siblings and do not import each other. Imports that break the
contract today are listed in `KNOWN_VIOLATIONS`: a new one fails, and so does a listed one that
no longer exists (the list only shrinks).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Units of code and their layer, bottom first. Capture is one unit: its packages call each other.
LAYERS: dict[str, int] = {
    # the record contract and shared utilities
    "perfsuite.safeio": 0,
    "perfsuite.version": 0,
    "perfsuite.stats": 1,
    "perfsuite.cachefiles": 1,
    "perfsuite.fmt": 1,
    "perfsuite.hostinfo": 1,
    "perfsuite.pricing": 1,
    "perfsuite.task_metrics": 2,
    "perfsuite.record": 2,
    # device models: spec table, roofs, math modes, kernel names, counter metrics
    "perfsuite.devices": 3,
    # the Chrome/Kineto trace reader: a record sidecar's format, read by capture and analysis
    "analyzers.timeline.reader": 3,
    # op models
    "perfsuite.flops": 4,
    # capture, importers and analysis, beside each other
    "capture": 5,
    "perfsuite.importers": 5,
    "analyzers": 5,
    # orchestration
    "perfsuite.study": 6,
    # shared row builders of the front ends
    "perfsuite.views": 7,
    # the HTML report, below the front ends that write its pages and show its figures
    "perfsuite.report": 8,
    # the command line and the Python API, beside each other
    "perfsuite.cli": 9,
    "perfsuite.api": 9,
    # the package facade and `python -m perfsuite`
    "perfsuite": 10,
    "perfsuite.__main__": 10,
}
CAPTURE = {
    "perfsuite.runner",
    "perfsuite.workloads",
    "perfsuite.models",
    "perfsuite.backends",
    "perfsuite.ceilings",
    "perfsuite.counters",
    "perfsuite.generalization",
    "perfsuite.tracking",
    "perfsuite.tracking_capture",
    "perfsuite.tracking_parts",
    "perfsuite.mllog",
}
FRAMEWORKS = ("torch", "tensorflow", "jax")

# (importing module, imported module) pairs that break the contract today.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    _module_name(p): p
    for p in sorted([*ROOT.glob("perfsuite/**/*.py"), *ROOT.glob("analyzers/**/*.py")])
}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    if module == "analyzers.timeline.reader":
        return module
    if parts[0] == "analyzers":
        return "analyzers"
    if parts[0] != "perfsuite":
        return None
    unit = ".".join(parts[:2])
    return "capture" if unit in CAPTURE else unit


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) of every import statement in `path`, relative ones resolved;
    `from pkg import name` names the submodule `pkg.name` where one exists."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, node.lineno))
    return found


def _violations() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, path in MODULES.items():
        src = _unit(module)
        for target, line in _imports(module, path):
            dst = _unit(target)
            if dst is None or dst == src or src is None:
                continue
            if LAYERS[dst] >= LAYERS[src]:
                where = f"{path.relative_to(ROOT)}:{line}: {src} (layer {LAYERS[src]}) imports"
                out[(module, target)].append(f"{where} {dst} (layer {LAYERS[dst]})")
    return out


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in MODULES}
    assert units <= set(LAYERS), sorted(units - set(LAYERS))


def test_no_new_import_breaks_the_layering():
    found = _violations()
    new = sorted(
        line for key, lines in found.items() if key not in KNOWN_VIOLATIONS for line in lines
    )
    assert not new, "imports against docs/architecture.md's layers:\n" + "\n".join(new)


def test_known_violations_still_exist():
    """A fixed violation leaves the list, so the list is always the real debt."""
    gone = sorted(KNOWN_VIOLATIONS - set(_violations()))
    assert not gone, f"fixed: remove from KNOWN_VIOLATIONS: {gone}"


def test_analysis_never_imports_a_framework_or_capture():
    bad = []
    for module, path in MODULES.items():
        if _unit(module) != "analyzers":
            continue
        for target, line in _imports(module, path):
            if target.split(".")[0] in FRAMEWORKS:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not bad, bad


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    """The reader itself: function-level and relative imports are found and resolved."""
    src = tmp_path / "x.py"
    src.write_text("def f():\n    from ..cli import common, nothing\n    import torch\n")
    assert _imports("perfsuite.report.x", src) == [
        ("perfsuite.cli.common", 2),
        ("perfsuite.cli", 2),
        ("torch", 3),
    ]
