"""Reference networks and the model-spec resolver used by `perfsuite flops`.

Importing this package does not import torch; building a model does.
"""

from perfsuite.models.resolve import BUILTIN, ModelSpecError, ResolvedModel, resolve_model

__all__ = ["BUILTIN", "ModelSpecError", "ResolvedModel", "resolve_model"]
