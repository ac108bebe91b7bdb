"""Turn a model spec string into a torch module (and its per-example input shape if known).

Specs: `builtin:resnet50` (our own reference networks: the ImageNet ResNets of the `imagenet`
workload, the CIFAR ResNets here), `torchvision:resnet50`,
`workload:cifar10` (a built-in workload's network), `package.module:callable` (called with no
arguments). A bare built-in name (`resnet18`) means `builtin:`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from perfsuite.workloads import get_workload

# name -> (module, function, per-example input shape)
BUILTIN: dict[str, tuple[str, str, tuple[int, ...]]] = {
    "resnet18": ("perfsuite.workloads.imagenet.resnet", "resnet18", (3, 224, 224)),
    "resnet50": ("perfsuite.workloads.imagenet.resnet", "resnet50", (3, 224, 224)),
    "resnet20": ("perfsuite.models.cifar_resnet", "resnet20", (3, 32, 32)),
    "resnet56": ("perfsuite.models.cifar_resnet", "resnet56", (3, 32, 32)),
}


class ModelSpecError(ValueError):
    """A model spec that cannot be resolved; the message is one line."""


@dataclass
class ResolvedModel:
    model: Any  # torch.nn.Module
    input_shape: tuple[int, ...] | None  # per example, without the batch dimension
    description: str


def resolve_model(spec: str) -> ResolvedModel:
    kind, _, name = spec.partition(":")
    if not name:
        if spec in BUILTIN:
            kind, name = "builtin", spec
        else:
            raise ModelSpecError(
                f"model spec {spec!r}: expected builtin:NAME, torchvision:NAME, workload:NAME "
                f"or module.path:callable (built-ins: {', '.join(BUILTIN)})"
            )
    if kind == "builtin":
        return _builtin(name)
    if kind == "torchvision":
        return _torchvision(name)
    if kind == "workload":
        return _workload(name)
    return _callable(kind, name, spec)


def _builtin(name: str) -> ResolvedModel:
    if name not in BUILTIN:
        raise ModelSpecError(f"unknown built-in model {name!r}; known: {', '.join(BUILTIN)}")
    module, func, shape = BUILTIN[name]
    model = getattr(importlib.import_module(module), func)()
    return ResolvedModel(model, shape, f"builtin:{name}")


def _torchvision(name: str) -> ResolvedModel:
    try:
        models = importlib.import_module("torchvision.models")
    except ImportError:
        hint = f"; try builtin:{name}" if name in BUILTIN else ""
        raise ModelSpecError(f"torchvision:{name}: torchvision is not installed{hint}") from None
    factory = getattr(models, name, None)
    if not callable(factory):
        raise ModelSpecError(f"torchvision:{name}: torchvision.models has no {name!r}")
    return ResolvedModel(factory(weights=None), None, f"torchvision:{name}")


def _workload(name: str) -> ResolvedModel:
    try:
        wl = get_workload(name)
    except KeyError as exc:
        raise ModelSpecError(f"workload:{name}: {exc.args[0]}") from None
    try:
        model = wl.build_model()
    except ValueError as exc:  # e.g. a model whose size comes from its data (squad)
        raise ModelSpecError(f"workload:{name}: {exc}") from None
    return ResolvedModel(model, tuple(wl.input_shape) or None, f"workload:{name}")


def _callable(module: str, attr: str, spec: str) -> ResolvedModel:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ModelSpecError(f"model spec {spec!r}: cannot import {module!r} ({exc})") from None
    factory = getattr(mod, attr, None)
    if not callable(factory):
        raise ModelSpecError(f"model spec {spec!r}: {module} has no callable {attr!r}")
    model = factory()
    shape = getattr(model, "input_shape", None)
    return ResolvedModel(model, tuple(shape) if shape else None, spec)
