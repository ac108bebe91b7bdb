"""Workloads: model + data + recipe behind one interface the runner instruments.

`get_workload(name)` returns a fresh Workload. New workloads (ImageNet, SQuAD, TensorFlow
versions, a user's own model) register with `register_workload`. Importing this package does
not import torch; building models and loading data does.
"""

from __future__ import annotations

from collections.abc import Callable

from perfsuite.workloads.base import DataBundle, Recipe, Workload

_FACTORIES: dict[str, Callable[[], Workload]] = {}


def register_workload(name: str, factory: Callable[[], Workload]) -> None:
    """Make `perfsuite run NAME` know a workload. `factory` builds a fresh instance."""
    _FACTORIES[name] = factory


def workload_names() -> list[str]:
    _register_builtins()
    return sorted(_FACTORIES)


def get_workload(name: str) -> Workload:
    _register_builtins()
    try:
        return _FACTORIES[name]()
    except KeyError:
        known = ", ".join(sorted(_FACTORIES))
        raise KeyError(f"unknown workload {name!r}; known: {known}") from None


def _register_builtins() -> None:
    if "digits" in _FACTORIES:
        return
    from perfsuite.workloads.cifar10 import Cifar10Workload
    from perfsuite.workloads.digits import DigitsWorkload

    register_workload("digits", DigitsWorkload)
    register_workload("cifar10", Cifar10Workload)


__all__ = [
    "DataBundle",
    "Recipe",
    "Workload",
    "get_workload",
    "register_workload",
    "workload_names",
]
