"""Collecting the suite stays cheap: every test worker imports every test file, so no file
imports a library that costs seconds and serves only some tests at module level (docs/testing.md,
"Collection and set-up"). Such a library is imported in the test or through a fixture (`tf`)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Seconds of import each (TensorFlow and Ray most), or pulling in what does (jsonschema: the
# IRI grammar of rfc3987-syntax; scikit-learn: scipy).
HEAVY = frozenset(
    {"tensorflow", "keras", "ray", "scipy", "sklearn", "jsonschema", "hta", "lark", "nbclient"}
)


def module_level_heavy_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of each top-level `import`, `from ... import` or
    `pytest.importorskip("...")` of a HEAVY library in a test file's source."""
    found = []
    for node in ast.parse(source).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, (ast.Assign, ast.Expr)) and isinstance(node.value, ast.Call):
            call = node.value
            if getattr(call.func, "attr", "") == "importorskip" and call.args:
                arg = call.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names = [arg.value]
        found += [(node.lineno, n) for n in names if n.split(".")[0] in HEAVY]
    return found


def test_the_rule_finds_each_form():
    source = (
        "import os\n"
        "import scipy.stats as ss\n"
        "from sklearn.datasets import load_digits\n"
        'tf = pytest.importorskip("tensorflow")\n'
        "def f():\n"
        "    import ray\n"
    )
    assert module_level_heavy_imports(source) == [
        (2, "scipy.stats"),
        (3, "sklearn.datasets"),
        (4, "tensorflow"),
    ]


def test_no_test_file_imports_a_heavy_library_at_module_level():
    found = [
        f"{path.relative_to(TESTS)}:{line}: {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in module_level_heavy_imports(path.read_text())
    ]
    assert found == []
