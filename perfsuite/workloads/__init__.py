"""Workloads: model + data + recipe + training step behind one interface the runner instruments.

`get_workload(name)` returns a fresh Workload. New workloads register with `register_workload`;
a user's own workload class is named `path/to/file.py:ClassName` or `package.module:ClassName`
and loaded on first use. Importing this package does not import torch; building models and
loading data does.
"""

from __future__ import annotations

from collections.abc import Callable

from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.cifar10.tensorflow import TFCifar10Workload
from perfsuite.workloads.data import Batch, DataSource
from perfsuite.workloads.digits.tensorflow import TFDigitsWorkload
from perfsuite.workloads.digits.workload import DigitsWorkload
from perfsuite.workloads.gpt.workload import GPTWorkload
from perfsuite.workloads.imagenet.workload import ImageNetWorkload
from perfsuite.workloads.squad.workload import SquadWorkload
from perfsuite.workloads.user import load_workload_class

_FACTORIES: dict[str, Callable[[], Workload]] = {}
# The built-in workloads by name, known without importing torch (`perfsuite run --help`);
# `_register_builtins` registers exactly these (tested).
BUILTIN_WORKLOADS = ("cifar10", "digits", "gpt", "imagenet", "squad")


def register_workload(name: str, factory: Callable[[], Workload]) -> None:
    """Make `perfsuite run NAME` know a workload. `factory` builds a fresh instance."""
    _FACTORIES[name] = factory


def workload_names() -> list[str]:
    _register_builtins()
    return sorted(_FACTORIES)


def get_workload(name: str, framework: str = "pytorch") -> Workload:
    """A fresh workload; `framework="tensorflow"` gives its TensorFlow version (digits, cifar10)."""
    _register_builtins()
    if framework != "pytorch":
        return _framework_workload(name, framework)
    if name not in _FACTORIES and ":" in name:
        register_workload(name, load_workload_class(name))
    try:
        return _FACTORIES[name]()
    except KeyError:
        known = ", ".join(sorted(_FACTORIES))
        raise KeyError(f"unknown workload {name!r}; known: {known}") from None


def _framework_workload(name: str, framework: str) -> Workload:
    """Workloads written in another framework (their modules import it only when used)."""
    if framework != "tensorflow":
        raise ValueError(f"unknown framework {framework!r}; known: pytorch, tensorflow")
    if name == "cifar10":
        return TFCifar10Workload()
    if name != "digits":
        raise ValueError(f"workload {name!r} has no TensorFlow version; known: cifar10, digits")
    return TFDigitsWorkload()


def _register_builtins() -> None:
    if "digits" in _FACTORIES:
        return
    from perfsuite.workloads.cifar10.workload import Cifar10Workload  # imports torch

    register_workload("digits", DigitsWorkload)
    register_workload("cifar10", Cifar10Workload)
    register_workload("imagenet", ImageNetWorkload)
    register_workload("squad", SquadWorkload)
    register_workload("gpt", GPTWorkload)


__all__ = [
    "BUILTIN_WORKLOADS",
    "Batch",
    "DataSource",
    "Recipe",
    "Workload",
    "get_workload",
    "register_workload",
    "workload_names",
]
