"""The layering contract of docs/architecture.md, checked over every import statement.

Every `import` in `perfsuite/` and `analyzers/` is read with `ast`, function-level ones
included, and held to three rules:

- layers: a module imports its own unit and the layers below it; units that share a layer are
  siblings and do not import each other (`LAYERS`); inside capture, the same rule over its
  packages (`CAPTURE`);
- no cycle between packages (`package_of` says what counts as a package), and none between
  modules: imports under `if TYPE_CHECKING:` count too, so a cycle is not hidden behind type
  hints (`MODULE_CYCLE_LAZY` names the one function-level registration that may close one);
- an import inside a function of an internal module is there only because that module needs
  an optional heavy dependency at import time (`HEAVY`), or for a reason in `LAZY_ALLOWED`;
  a fresh process importing every module counted light loads no heavy dependency.

Each rule over import statements is shown failing on a planted module (`_plant`).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Units of code and their layer, bottom first. Capture is one unit here, its packages ordered
# in `CAPTURE`.
LAYERS: dict[str, int] = {
    # the record contract and shared utilities
    "perfsuite.safeio": 0,
    "perfsuite.version": 0,
    "perfsuite.stats": 1,
    "perfsuite.cachefiles": 1,
    "perfsuite.fmt": 1,
    "perfsuite.hostinfo": 1,
    "perfsuite.pricing": 1,
    "perfsuite.record": 2,
    "perfsuite.task_metrics": 2,
    # device models: spec table, roofs, math modes, kernel names, counter metrics
    "perfsuite.devices": 3,
    # the Chrome/Kineto trace file reader: a record sidecar's format, read by capture (the
    # counters) and by the timeline analyses; it imports nothing above the record
    "perfsuite.traces": 3,
    # op models, and MFU (model FLOPs against the device's roof)
    "perfsuite.flops": 4,
    # capture, importers and analysis, beside each other
    "capture": 5,
    "perfsuite.importers": 5,
    "perfsuite.analyzers": 5,
    # orchestration
    "perfsuite.study": 6,
    # shared row builders of the front ends
    "perfsuite.views": 7,
    # the plotly figures the report embeds and the API returns
    "perfsuite.figures": 8,
    # the front ends, beside each other: the command line, the HTML report, the Python API
    "perfsuite.cli": 9,
    "perfsuite.report": 9,
    "perfsuite.api": 9,
    # the package facade, and the program (`perfsuite`, `python -m perfsuite`) that wires the
    # report's pages into the command line
    "perfsuite": 10,
    "perfsuite.__main__": 10,
}
# Capture's packages and their rank inside capture, bottom first, under the same rule as
# LAYERS: a package imports those of a lower rank; packages of one rank do not import each other.
CAPTURE: dict[str, int] = {
    # the device seam (PyTorch and TensorFlow backends), measuring device ceilings and hardware
    # counters, the MLPerf log writer
    "perfsuite.backends": 0,
    "perfsuite.ceilings": 0,
    "perfsuite.counters": 0,
    "perfsuite.mllog": 0,
    # the workloads: model, data, recipe and step behind one seam
    "perfsuite.workloads": 1,
    # the engine that runs workloads and user loops and writes records; the --model resolver,
    # which resolves a workload's network too
    "perfsuite.runner": 2,
    "perfsuite.models": 2,
    # the threshold model on shifted and corrupted test sets: rebuilds a run's model
    "perfsuite.generalization": 3,
}
FRAMEWORKS = ("torch", "tensorflow", "jax")
# Optional dependencies heavy enough to load only where used.
HEAVY = ("torch", "tensorflow", "ray", "pandas", "plotly")
# Internal imports inside functions for a reason other than HEAVY: (importing modules, imported
# modules), as fnmatch patterns over dotted names, -> why.
LAZY_ALLOWED: dict[tuple[str, str], str] = {
    ("perfsuite.cli*", "*"): (
        "every command module is imported to build the parser of `perfsuite --help`; each "
        "handler imports what it runs, so parsing loads neither capture nor the analysis stack"
    ),
    ("perfsuite", "*"): (
        "`import perfsuite` stays cheap and framework-free: `track` and the API load on first use"
    ),
    ("perfsuite.flops.registry", "perfsuite.flops.*"): (
        "the formula modules register themselves on first lookup; they import `register` from "
        "the registry"
    ),
}

# Modules whose function-level imports are left out of the module cycle rule: importing module
# -> why its imports come back to it by design.
MODULE_CYCLE_LAZY: dict[str, str] = {
    "perfsuite.flops.registry": (
        "the formula modules import `register` from the registry, which imports them on first "
        "lookup so that a user's formula for a built-in op replaces it"
    ),
}


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] == "analyzers":  # the source tree's analyzers/ installs as perfsuite.analyzers
        parts.insert(0, "perfsuite")
    return ".".join(parts)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    paths = [*root.glob("perfsuite/**/*.py"), *root.glob("analyzers/**/*.py")]
    return {_module_name(p, root): p for p in sorted(paths)}


MODULES = _modules()


def _unit(module: str) -> str | None:
    parts = module.split(".")
    if module in LAYERS:
        return module
    if parts[0] != "perfsuite":
        return None
    unit = ".".join(parts[:2])
    return "capture" if unit in CAPTURE else unit


def _capture_package(module: str) -> str | None:
    """The capture package (a key of CAPTURE) a module belongs to, or None."""
    package = ".".join(module.split(".")[:2])
    return package if package in CAPTURE else None


def package_of(module: str) -> str | None:
    """The package a module belongs to, for the cycle rule: `perfsuite.X` (a package, or a
    top-level module such as `perfsuite.fmt`) and `perfsuite.analyzers.X` (a concept folder
    such as `perfsuite.analyzers.roofline`), whole with their subpackages; each of capture's
    packages is one. None outside the project."""
    unit = _unit(module)
    if unit == "capture":
        return _capture_package(module)
    if unit == "perfsuite.analyzers":
        return ".".join(module.split(".")[:3])
    return unit


def _imports(
    module: str, path: Path, modules: dict[str, Path] | None = None
) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) of every import statement in `path`,
    relative ones resolved; `from pkg import name` names the submodule `pkg.name` where one
    exists."""
    modules = MODULES if modules is None else modules
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.append((sub if sub in modules else target, child.lineno, in_function))
            function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, in_function or function)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _internal(target: str, modules: dict[str, Path]) -> str | None:
    """The project module an import names (`pkg.mod.name` -> `pkg.mod`), or None."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


_SEEN: dict[tuple[str, Path], list[tuple[str, int, bool]]] = {}


def _all_imports(modules: dict[str, Path]) -> Iterable[tuple[str, Path, str, int, bool]]:
    """Every import of every module, each file parsed once (a planted module adds names that
    no project file imports, so the project's resolved imports stay the same)."""
    for module, path in modules.items():
        key = (module, path)
        if key not in _SEEN:
            _SEEN[key] = _imports(module, path, modules)
        for target, line, lazy in _SEEN[key]:
            yield module, path, target, line, lazy


def _where(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def violations(modules: dict[str, Path] = MODULES) -> list[str]:
    out = []
    for module, path, target, line, _ in _all_imports(modules):
        src, dst = _unit(module), _unit(target)
        if src is None or dst is None:
            continue
        if dst == src == "capture":
            src, dst = _capture_package(module), _capture_package(target)
            ranks = CAPTURE
            what = "capture rank"
        else:
            ranks, what = LAYERS, "layer"
        if src is None or dst is None or dst == src:
            continue
        if ranks[dst] >= ranks[src]:
            out.append(
                f"{_where(path)}:{line}: {src} ({what} {ranks[src]}) imports "
                f"{target}: {dst} ({what} {ranks[dst]})"
            )
    return out


def package_graph(modules: dict[str, Path] = MODULES) -> dict[str, dict[str, str]]:
    """{package: {imported package: where the first such import is}}, every import counted."""
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for module, path, target, line, _ in _all_imports(modules):
        internal = _internal(target, modules)
        a, b = package_of(module), package_of(internal) if internal else None
        if a and b and a != b:
            graph[a].setdefault(b, f"{path.name}:{line} ({module} -> {internal})")
    return graph


def module_graph(modules: dict[str, Path] = MODULES) -> dict[str, dict[str, str]]:
    """{module: {imported module: where}} over `perfsuite/` and `analyzers/`: every import
    statement, those under `if TYPE_CHECKING:` and inside functions included (except the
    function-level ones of a module in MODULE_CYCLE_LAZY)."""
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for module, path, target, line, lazy in _all_imports(modules):
        internal = _internal(target, modules)
        if internal is None or internal == module or (lazy and module in MODULE_CYCLE_LAZY):
            continue
        graph[module].setdefault(internal, f"{path.name}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _module_level(modules: dict[str, Path]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for module, _, target, _, lazy in _all_imports(modules):
        if not lazy:
            out[module].append(target)
    return out


def needs_heavy(modules: dict[str, Path]) -> set[str]:
    """Modules whose import loads a HEAVY dependency: directly, or through a module-level
    import of a module (or a parent package) that does."""
    top = _module_level(modules)
    heavy: set[str] = set()
    changed = True
    while changed:
        changed = False
        for module in modules:
            if module in heavy:
                continue
            parts = module.split(".")
            parents = [".".join(parts[:i]) for i in range(1, len(parts))]
            for target in [*top.get(module, []), *parents]:
                internal = _internal(target, modules)
                if target.split(".")[0] in HEAVY or (internal in heavy and internal != module):
                    heavy.add(module)
                    changed = True
                    break
    return heavy


def _allowed(module: str, target: str) -> bool:
    return any(fnmatch(module, src) and fnmatch(target, dst) for src, dst in LAZY_ALLOWED)


def lazy_imports(modules: dict[str, Path] = MODULES) -> list[str]:
    """Function-level imports of project modules that need no HEAVY dependency and have no
    reason in LAZY_ALLOWED."""
    heavy = needs_heavy(modules)
    out = []
    for module, path, target, line, lazy in _all_imports(modules):
        internal = _internal(target, modules)
        if not lazy or internal is None or internal in heavy or _allowed(module, internal):
            continue
        out.append(f"{_where(path)}:{line}: {module} imports {internal} in a function")
    return out


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in MODULES}
    assert units <= set(LAYERS), sorted(units - set(LAYERS))


def test_imports_obey_the_layers():
    found = violations()
    assert not found, "imports against docs/architecture.md's layers:\n" + "\n".join(found)


def test_no_import_cycle_between_packages():
    graph = package_graph()
    found = cycles(graph)
    detail = [f"{a} -> {b}: {graph[a][b]}" for c in found for a in c for b in graph[a] if b in c]
    assert not found, f"package import cycles {found}:\n" + "\n".join(detail)


def test_no_import_cycle_between_modules():
    graph = module_graph()
    found = cycles(graph)
    detail = [f"{a} -> {b}: {graph[a][b]}" for c in found for a in c for b in graph[a] if b in c]
    assert not found, (
        f"module import cycles {found} (move the shared type or function to a module both "
        "import):\n" + "\n".join(detail)
    )


def test_function_level_imports_only_for_heavy_dependencies():
    found = lazy_imports()
    assert not found, "move to module level, or give a reason in LAZY_ALLOWED:\n" + "\n".join(found)


def test_modules_counted_light_import_no_heavy_dependency():
    """`needs_heavy` reads import statements; a module can still load torch at import time
    another way (a package `__getattr__` that imports a submodule on `from pkg import name`).
    Importing every module it counts light, in one fresh process, must load no HEAVY one."""
    heavy = needs_heavy(MODULES)
    light = sorted(m for m in MODULES if m not in heavy and not m.endswith("__main__"))
    code = (
        "import importlib, json, sys\n"
        f"heavy, loaded = {HEAVY!r}, {{}}\n"
        f"for m in {light!r}:\n"
        "    before = {h for h in heavy if h in sys.modules}\n"
        "    importlib.import_module(m)\n"
        "    new = [h for h in heavy if h in sys.modules and h not in before]\n"
        "    if new:\n"
        "        loaded[m] = new\n"
        "print(json.dumps(loaded))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    assert json.loads(out.stdout) == {}


def test_every_allowed_lazy_import_is_used():
    """LAZY_ALLOWED names only pairs that occur, so the list stays the real set of reasons."""
    heavy = needs_heavy(MODULES)
    lazy = [
        (module, internal)
        for module, _, target, _, is_lazy in _all_imports(MODULES)
        if is_lazy and (internal := _internal(target, MODULES)) and internal not in heavy
    ]
    unused = [
        k for k in LAZY_ALLOWED if not any(fnmatch(m, k[0]) and fnmatch(i, k[1]) for m, i in lazy)
    ]
    assert not unused, unused


def test_analysis_never_imports_a_framework_capture_or_presentation():
    bad = []
    for module, path, target, line, _ in _all_imports(MODULES):
        if not module.startswith("perfsuite.analyzers"):
            continue
        dst = _unit(target)
        if target.split(".")[0] in FRAMEWORKS or (
            dst is not None and LAYERS[dst] >= 5 and dst != "perfsuite.analyzers"
        ):
            bad.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not bad, bad


def test_the_reader_sees_function_level_and_relative_imports(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("def f():\n    from ..cli import common, nothing\n    import torch\nimport os\n")
    assert _imports("perfsuite.report.x", src) == [
        ("perfsuite.cli.common", 2, True),
        ("perfsuite.cli", 2, True),
        ("torch", 3, True),
        ("os", 4, False),
    ]


# ---------------------------------------------------------------- each rule fails when broken
def _plant(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    """The project's module map plus modules planted under `tmp_path`."""
    modules = dict(MODULES)
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        modules[name] = path
    return modules


def test_a_planted_layer_violation_fails(tmp_path):
    modules = _plant(
        tmp_path, {"perfsuite.analyzers.planted": "from perfsuite.runner.routes import run\n"}
    )
    assert [v for v in violations(modules) if "planted" in v] == [
        "planted.py:1: perfsuite.analyzers (layer 5) imports perfsuite.runner.routes.run: "
        "capture (layer 5)"
    ]


def test_a_planted_capture_order_violation_fails(tmp_path):
    modules = _plant(
        tmp_path,
        {
            "perfsuite.workloads.planted": "from perfsuite.runner.routes import run\n",
            "perfsuite.ceilings.planted": "import perfsuite.counters.collect\n",
        },
    )
    assert sorted(v for v in violations(modules) if "planted" in v) == [
        "planted.py:1: perfsuite.ceilings (capture rank 0) imports perfsuite.counters.collect: "
        "perfsuite.counters (capture rank 0)",
        "planted.py:1: perfsuite.workloads (capture rank 1) imports perfsuite.runner.routes.run: "
        "perfsuite.runner (capture rank 2)",
    ]


def test_a_planted_cycle_inside_capture_fails(tmp_path):
    modules = _plant(
        tmp_path,
        {
            "perfsuite.backends.planted": "def f():\n    from perfsuite.runner import planted\n",
            "perfsuite.runner.planted": "import perfsuite.backends.planted\n",
        },
    )
    assert ["perfsuite.backends", "perfsuite.runner"] in cycles(package_graph(modules))


def test_a_planted_cycle_fails(tmp_path):
    modules = _plant(
        tmp_path,
        {
            "perfsuite.record.planted": "import perfsuite.devices.planted\n",
            "perfsuite.devices.planted": "from perfsuite.record import planted\n",
        },
    )
    assert ["perfsuite.devices", "perfsuite.record"] in cycles(package_graph(modules))


def test_a_planted_module_cycle_behind_type_checking_fails(tmp_path):
    typed = (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from perfsuite.api import b\n"
    )
    modules = _plant(
        tmp_path,
        {
            "perfsuite.api.a": typed,
            "perfsuite.api.b": "from perfsuite.api import a\n",
            "perfsuite.flops.planted": "def f():\n    from perfsuite.flops import conv\n",
            "perfsuite.flops.conv": "from perfsuite.flops import planted\n",
        },
    )
    found = cycles(module_graph(modules))
    assert ["perfsuite.api.a", "perfsuite.api.b"] in found  # type hints count
    assert any("perfsuite.flops.planted" in c for c in found)  # so do function-level imports
    graph = module_graph(modules)
    assert graph["perfsuite.api.a"]["perfsuite.api.b"] == "a.py:4"
    assert not [c for c in cycles(module_graph()) if "perfsuite.api.a" in c]


def test_a_planted_function_level_import_fails(tmp_path):
    modules = _plant(
        tmp_path,
        {
            "perfsuite.analyzers.planted": (
                "def f():\n    from perfsuite import fmt\n\n\n"
                "def g():\n    from perfsuite.figures import runs\n"
            )
        },
    )
    # fmt needs nothing heavy: flagged; the figures need plotly: allowed
    assert [f for f in lazy_imports(modules) if "planted" in f] == [
        "planted.py:2: perfsuite.analyzers.planted imports perfsuite.fmt in a function"
    ]


def test_a_planted_function_level_import_inside_capture_fails(tmp_path):
    modules = _plant(
        tmp_path,
        {
            "perfsuite.runner.planted": (
                "def f():\n    from perfsuite.runner.record import checkpoint\n\n\n"
                "def g():\n    from perfsuite.workloads.cifar10 import workload\n"
            )
        },
    )
    # checkpoint needs nothing heavy: flagged; cifar10's workload imports torch: allowed
    assert [f for f in lazy_imports(modules) if "planted" in f] == [
        "planted.py:2: perfsuite.runner.planted imports perfsuite.runner.record.checkpoint "
        "in a function"
    ]


def test_nothing_imports_a_top_level_analyzers():
    """The source tree's `analyzers/` is installed as `perfsuite.analyzers` (setup.py): an
    `import analyzers...` would work from a checkout and fail once installed."""
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for _module, path, target, line, _ in _all_imports(MODULES)
        if target.split(".")[0] == "analyzers"
    ]
    tests = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("examples/*.py")]
    for path in tests:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            bad += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {n}"
                for n in names
                if n.split(".")[0] == "analyzers"
            ]
    assert not bad, bad
