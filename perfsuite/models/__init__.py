"""The model-spec resolver used by `perfsuite flops`, and the CIFAR reference ResNets.

It sits above the workloads: a spec names a built-in network, a torchvision one, a callable or
a workload's network (`workload:NAME`).

Importing this package does not import torch; building a model does.
"""

from perfsuite.models.resolve import BUILTIN, ModelSpecError, ResolvedModel, resolve_model

__all__ = ["BUILTIN", "ModelSpecError", "ResolvedModel", "resolve_model"]
