"""The pieces of `perfsuite.track` (runner/routes/track.py) that read a user's step: what it was
called with (batch size, dtype) and returned (the loss), and the process state that keeps
detours and profile windows from nesting."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

NO_LOSS = (
    "run.step: the step returned no loss (a tensor, a number, a mapping with 'loss' or a "
    "tuple/list starting with one): a NaN loss cannot end the run as diverged, and no "
    "train_loss is recorded"
)
NO_SIZE = (
    "run.step: no tensor argument to take the batch size from and no batch_size given: "
    "samples not counted, no samples/s"
)
NEVER_STEPPED = "run.step was never called: no throughput, FLOPs or profile"

_local = threading.local()  # detour depth, per thread: a detour runs on the caller's thread
_windows_open = 0  # profile windows of this process (the profiler is process-wide)


def leaves(obj: Any, depth: int = 0) -> Iterator[Any]:
    """The values inside nested tuples, lists and mappings, in order: a batch as the step
    receives it (`step(x, y)`, `step(batch={"ids": ...})`, `step((x, y))`)."""
    if isinstance(obj, Mapping) and depth < 8:
        for value in obj.values():
            yield from leaves(value, depth + 1)
    elif isinstance(obj, (list, tuple)) and depth < 8:
        for value in obj:
            yield from leaves(value, depth + 1)
    else:
        yield obj


def first_tensor(args: tuple, kw: dict, want: Callable[[Any], bool]) -> Any:
    """The first tensor among the step's arguments (positional, then keyword, nested) that
    `want` accepts, or None."""
    import torch

    if args and isinstance(args[0], torch.Tensor) and want(args[0]):
        return args[0]  # the usual `step(x, y)`: no walk (a step's overhead is on the clock)
    for value in leaves((args, kw)):
        if isinstance(value, torch.Tensor) and want(value):
            return value
    return None


class _NoOptimizer:
    """Stands in for the optimizer of a step that updates parameters itself (by hand, with
    torch.func): nothing to save or restore beyond the model, which detours restore."""

    def __init__(self) -> None:
        self.param_groups: list[dict[str, Any]] = []

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class _OtherOptimizer:
    """Another library's optimizer with `state_dict()` / `load_state_dict()`: detours save and
    restore its state through them (its `param_groups`, if any, name what it trains)."""

    def __init__(self, optimizer: Any) -> None:
        self.inner = optimizer
        self.param_groups = list(getattr(optimizer, "param_groups", None) or [])

    def state_dict(self) -> Any:
        return self.inner.state_dict()

    def load_state_dict(self, state: Any) -> None:
        self.inner.load_state_dict(state)


def restorable_optimizer(optimizer: Any) -> tuple[Any, str]:
    """What detours save and restore for `optimizer`: a torch.optim optimizer itself, another
    with state_dict()/load_state_dict() wrapped, None (no optimizer: the step updates the
    model itself) a stand-in; (None, why) for one whose state cannot be restored."""
    import torch

    if optimizer is None:
        return _NoOptimizer(), ""
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer, ""
    if callable(getattr(optimizer, "state_dict", None)) and callable(
        getattr(optimizer, "load_state_dict", None)
    ):
        return _OtherOptimizer(optimizer), ""
    return None, (
        f"optimizer {type(optimizer).__name__} has no state_dict()/load_state_dict(): detours "
        "could not restore it after their extra steps, so no FLOP count or window (a "
        "stateless update needs no optimizer=)"
    )


def batch_shapes(args: tuple, kw: dict) -> tuple[tuple[tuple[int, ...], str], ...]:
    """(shape, dtype) of every tensor among the step's arguments, in order: two calls with
    equal shapes do the same work (a partial last batch differs)."""
    import torch

    return tuple(
        (tuple(v.shape), str(v.dtype)) for v in leaves((args, kw)) if isinstance(v, torch.Tensor)
    )


PHASE_NOTE = (
    "optimizer = inside optimizer.step() of the optimizer given, and the ops after the "
    "step's backward that autograd does not record (grad mode off, or no argument requiring "
    "grad: a hand-written update, p.data.add_, gradient clipping); backward = run by "
    "autograd; forward = the rest"
)


@contextlib.contextmanager
def optimizer_phase(optimizer: Any, counter: Any) -> Iterator[None]:
    """Label the ops inside `optimizer.step()` "optimizer" while counting (torch.optim's step
    hooks); other optimizers are left to the counter's inference (OpCounter infer_update)."""
    pre = getattr(optimizer, "register_step_pre_hook", None)
    post = getattr(optimizer, "register_step_post_hook", None)
    if pre is None or post is None:
        yield
        return
    stack = contextlib.ExitStack()

    def enter(*_: Any) -> None:
        stack.enter_context(counter.phase("optimizer"))

    def leave(*_: Any) -> None:
        stack.close()

    handles = [pre(enter), post(leave)]
    try:
        yield
    finally:
        stack.close()
        for h in handles:
            h.remove()


def batch_size_of(args: tuple, kw: dict) -> int | None:
    """The leading dimension of the step's first tensor argument with one; None if none has."""
    tensor = first_tensor(args, kw, lambda t: t.ndim > 0)
    return None if tensor is None else int(tensor.shape[0])


def trained_parameter(module: Any, optimizer: Any = None) -> Any:
    """The module's first parameter, else the optimizer's (a module may hold none: a fixed
    feature extractor with the trained tensors outside it); None without either."""
    param = next(iter(module.parameters()), None) if module is not None else None
    if param is None and optimizer is not None:
        param = next((p for g in optimizer.param_groups for p in g["params"]), None)
    return param


def loss_of(out: Any) -> Any:
    """The loss in what a step returned: a tensor of any shape (its mean, left on its device:
    no sync), a number, a mapping's "loss" (a Hugging Face ModelOutput), or a tuple's or
    list's first item; None when there is none (None, an empty tensor, another object)."""
    import torch

    if not isinstance(out, torch.Tensor):
        if isinstance(out, Mapping):
            out = out.get("loss")
        elif isinstance(out, (tuple, list)) and out:
            out = out[0]
    if isinstance(out, torch.Tensor):
        if out.numel() == 0:
            return None
        t = out.detach()
        if t.ndim == 0 and t.dtype in (torch.float32, torch.float64):
            return t  # the usual scalar loss: no op at all
        if t.is_complex():
            t = t.abs()
        return t.mean(dtype=torch.float64)  # per-sample, half-precision or integer values
    if isinstance(out, (int, float)) and not isinstance(out, bool):
        return float(out)
    return None


def in_detour() -> bool:
    """True while a track's detour runs on this thread: a track created there (a step that
    opens its own `perfsuite.track`) is inert, so detour calls leave no run folders."""
    return getattr(_local, "depth", 0) > 0


@contextlib.contextmanager
def detour_scope() -> Iterator[None]:
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


@contextlib.contextmanager
def window_scope() -> Iterator[None]:
    global _windows_open
    _windows_open += 1
    try:
        yield
    finally:
        _windows_open -= 1


def profiler_active() -> bool:
    """A profiler is recording: one of perfsuite's windows, or the user's own torch.profiler
    (seen while it records; a scheduled one in its wait phase is not). torch.profiler does
    not nest: a second one in the same process crashed it (a segmentation fault)."""
    if _windows_open:
        return True
    import torch

    probe = getattr(torch._C._autograd, "_profiler_enabled", None)
    return bool(probe()) if probe is not None else False


def autocast_dtype(kind: str) -> str | None:
    """The autocast dtype active here for device kind `kind`, if any."""
    import torch

    if not torch.is_autocast_enabled(kind):
        return None
    return str(torch.get_autocast_dtype(kind)).replace("torch.", "")


def step_context(kind: str) -> tuple[str | None, bool]:
    """What a step's math depends on outside the step: autocast and grad mode. A detour taken
    after the loop replays a kept call in the ones it ran in (`in_step_context`)."""
    import torch

    return autocast_dtype(kind), torch.is_grad_enabled()


@contextlib.contextmanager
def in_step_context(kind: str, context: tuple[str | None, bool]) -> Iterator[None]:
    """Autocast and grad mode as `context` (a `step_context` of device kind `kind`) inside,
    as they were outside afterwards."""
    import torch

    dtype, grad = context
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.set_grad_enabled(grad))
        if autocast_dtype(kind) != dtype:
            on = dtype is not None
            cast = getattr(torch, dtype) if on else None  # type: ignore[arg-type]
            stack.enter_context(torch.autocast(kind, dtype=cast, enabled=on))
        yield


def device_error(exc: Exception) -> str:
    """A backend's device error, worded for the Python API (it names the CLI's --device)."""
    text = str(exc).replace("--device must", "device must").replace("--device ", "device=")
    return f"perfsuite.track: {text}"
