"""The live counter: a TorchDispatchMode that applies the registry to every aten op it sees.

It sees ops after autograd decomposition (conv2d arrives as aten::convolution, linear as
aten::addmm, backward as aten::convolution_backward...), named by their schema name, which is
also how torch.profiler names its events: counted FLOPs join measured time by op name.
Runs once per run on one real step, or on the `meta` device where nothing is computed.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from perfsuite.flops.call import OpCall, TensorMeta
from perfsuite.flops.registry import IGNORED_NAMESPACES, estimate, is_ignored
from perfsuite.flops.result import CountResult, ModuleRow, OpRow

LOG = logging.getLogger("perfsuite.flops")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _stored(t: torch.Tensor) -> int | None:
    """Distinct elements of a broadcast view (some stride 0, from `expand`): what a kernel has
    to read, not its logical size. None for dense tensors and for layouts without strides."""
    if t.layout != torch.strided:
        return None
    try:
        strides = [int(s) for s in t.stride()]
        sizes = [int(d) for d in t.shape]
    except (RuntimeError, TypeError, ValueError):  # symbolic or stride-less tensors
        return None
    if 0 in sizes or all(s != 0 or d == 1 for s, d in zip(strides, sizes, strict=True)):
        return None
    return math.prod(d for s, d in zip(strides, sizes, strict=True) if s != 0)


def _meta(t: torch.Tensor) -> TensorMeta:
    return TensorMeta(tuple(t.shape), _dtype_name(t.dtype), _stored(t))


def _describe(value: Any) -> Any:
    """Tensors -> TensorMeta, containers recursively, dtypes/devices -> str, scalars as-is."""
    if isinstance(value, torch.Tensor):
        return _meta(value)
    if isinstance(value, (list, tuple)):
        return [_describe(v) for v in value]
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.hint if hasattr(value.node, "hint") else None
    return value


def _outputs(result: Any) -> list[TensorMeta]:
    if isinstance(result, torch.Tensor):
        return [_meta(result)]
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in _outputs(r)]
    return []


def _tracked(args: Any) -> bool:
    """Autograd records this op: grad mode is on and a tensor argument requires grad (an
    update through `p.data` or under no_grad is not recorded)."""
    if not torch.is_grad_enabled():
        return False
    for a in args:
        if isinstance(a, torch.Tensor) and a.requires_grad:
            return True
        if isinstance(a, (list, tuple)) and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in a
        ):
            return True
    return False


def _is_out(arg: Any) -> bool:
    """An out= argument (kwarg-only and written): the op's result, not an input."""
    if hasattr(arg, "is_out"):
        return bool(arg.is_out)
    alias = arg.alias_info
    return bool(arg.kwarg_only and alias is not None and alias.is_write)


def describe_call(func: Any, args: Sequence[Any], kwargs: dict[str, Any], result: Any) -> OpCall:
    """An OpCall with all schema arguments in order (defaults filled in). out= arguments are
    left out: they come last in the schema and are the call's result (`outputs`), so reading
    them as inputs would charge the written tensor twice."""
    schema = func._schema
    values: list[Any] = []
    for i, arg in enumerate(schema.arguments):
        if _is_out(arg):
            continue
        if i < len(args) and not arg.kwarg_only:
            v = args[i]
        elif arg.name in kwargs:
            v = kwargs[arg.name]
        elif arg.has_default_value():
            v = arg.default_value
        else:
            v = None
        values.append(_describe(v))
    return OpCall(schema.name, values, _outputs(result), schema.overload_name)


class OpCounter(TorchDispatchMode):
    """Count FLOPs and modeled bytes of every aten op run inside `with counter:`.

    Label phases with `with counter.phase("forward"):`; outside an explicit phase, ops run by
    autograd are "backward" and the rest "forward". With `infer_update=True` (a user's step
    counted whole), ops after a backward that autograd does not record (grad mode off, or
    no argument requiring grad: `p.data.add_`) are "optimizer": a hand-written update,
    gradient clipping. With `track_modules=True` ops are also
    attributed to the innermost nn.Module running them; that installs torch's ModuleTracker
    hooks, which make a counted CPU training step several times slower, so it is off by default.
    """

    def __init__(self, track_modules: bool = False, infer_update: bool = False) -> None:
        super().__init__()
        self._infer_update = infer_update
        self._after_backward = False
        self._rows: dict[tuple[str, str], OpRow] = {}
        self._unknown: Counter[str] = Counter()
        self._failed: Counter[str] = Counter()  # ops whose formula raised
        self._errors: dict[str, str] = {}  # op -> its formula's first error, one line
        self._modules: dict[str, ModuleRow] = {}
        self._phase: str | None = None
        self._dtype: str | None = None
        self._tracker: Any = None
        self._entered: dict[str, int] = {}
        self._seq = 0
        self._stack = contextlib.ExitStack()
        if track_modules:
            from torch.utils.module_tracker import ModuleTracker

            self._tracker = ModuleTracker()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = previous

    def __enter__(self) -> OpCounter:
        if self._tracker is not None:
            self._stack.enter_context(self._tracker)
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self._stack.close()

    def _current_phase(self, args: Any = ()) -> str:
        if self._phase is not None:
            return self._phase
        if torch._C._current_graph_task_id() != -1:
            self._after_backward = True
            return "backward"
        if self._infer_update and self._after_backward and not _tracked(args):
            return "optimizer"
        return "forward"

    def _current_module(self) -> str:
        """Innermost running module. ModuleTracker can leave stale entries in backward (e.g.
        an nn.Identity shortcut, whose backward never ends), so a module only counts while its
        whole ancestor chain is running; among those, the deepest, then the latest entered."""
        parents = self._tracker.parents
        for gone in [p for p in self._entered if p not in parents]:
            del self._entered[gone]
        for p in parents:
            if p not in self._entered:
                self._entered[p] = self._seq
                self._seq += 1
        best, best_key = "(no module)", (-1, -1)
        for p in parents:
            if p == "Global":
                continue
            parts = p.split(".")
            if all(".".join(parts[:i]) in parents for i in range(1, len(parts))):
                key = (len(parts), self._entered[p])
                if key > best_key:
                    best, best_key = p, key
        return best

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = func._schema.name
        if name.startswith(IGNORED_NAMESPACES) or is_ignored(name):
            return result
        try:
            est = estimate(describe_call(func, args, kwargs, result))
        except Exception as exc:  # a formula's bug must not break the step being counted
            self._formula_failed(name, exc)
            return result
        if not est.known:
            self._unknown[name] += 1
            return result
        phase = self._current_phase(args)
        row = self._rows.get((name, phase))
        if row is None:
            row = self._rows[(name, phase)] = OpRow(name, est.family, phase)
        row.calls += 1
        row.flops += est.flops
        row.bytes += est.bytes
        if self._dtype is None and est.family in ("convolution", "matmul", "attention"):
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            self._dtype = _dtype_name(first.dtype) if first is not None else None
        if self._tracker is not None:
            mod = self._current_module()
            mrow = self._modules.setdefault(mod, ModuleRow(mod))
            mrow.calls += 1
            mrow.flops += est.flops
            mrow.bytes += est.bytes
        return result

    def _formula_failed(self, name: str, exc: Exception) -> None:
        """The op is not modeled: listed with its error; the first traceback is logged."""
        if name not in self._errors:
            first = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            self._errors[name] = f"formula error: {first}"
            LOG.error("FLOP formula of %s raised; the op is not modeled", name, exc_info=True)
        self._failed[name] += 1

    def result(self) -> CountResult:
        unknown = [{"op": op, "calls": n} for op, n in self._unknown.most_common()]
        unknown += [
            {"op": op, "calls": n, "error": self._errors[op]}
            for op, n in self._failed.most_common()
        ]
        return CountResult(
            per_op=[copy.copy(r) for r in self._rows.values()],
            unknown_ops=unknown,
            per_module=[copy.copy(m) for m in self._modules.values()],
            dtype=self._dtype,
        )


OPTIMIZERS = ("sgd", "adam", "adamw")


def make_optimizer(name: str, params: Any) -> torch.optim.Optimizer:
    """The optimizers `perfsuite flops --optimizer` knows, with common default settings."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)
    raise ValueError(f"unknown optimizer {name!r}; expected one of {OPTIMIZERS}")


def _loss(out: Any) -> torch.Tensor:
    """Cross-entropy on random labels for [N, C] logits, otherwise the sum of the output."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    if out.ndim == 2 and out.shape[1] > 1:
        target = torch.randint(0, out.shape[1], (out.shape[0],), device=out.device)
        return torch.nn.functional.cross_entropy(out, target)
    return out.sum()


def _rebind_optimizer(
    opt: torch.optim.Optimizer, original: torch.nn.Module, copied: torch.nn.Module
) -> torch.optim.Optimizer:
    """A fresh optimizer of `opt`'s class and group settings over `copied`'s parameters."""
    new_of = {id(p): q for p, q in zip(original.parameters(), copied.parameters(), strict=True)}
    groups = []
    for g in opt.param_groups:
        try:
            ps = [new_of[id(p)] for p in g["params"]]
        except KeyError:
            raise ValueError("optimizer holds parameters that are not the model's") from None
        groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ps})
    try:
        return type(opt)(groups, **opt.defaults)
    except TypeError as exc:
        raise ValueError(
            f"cannot rebuild {type(opt).__name__} for the copied model ({exc}); "
            "pass the optimizer's name instead"
        ) from None


def count_model(
    model: torch.nn.Module,
    input_shapes: Sequence[int] | Sequence[Sequence[int]],
    *,
    train: bool = False,
    optimizer: str | torch.optim.Optimizer | None = None,
    device: str = "meta",
    dtype: torch.dtype = torch.float32,
    track_modules: bool = False,
) -> CountResult:
    """Count one forward pass (eval mode, no grad) or one training step (forward with a
    cross-entropy loss, backward, optimizer step) of `model` on random inputs of the given
    full shapes (batch first). On `device="meta"` (default) nothing is computed. The model
    (and an optimizer instance) is always copied first, never modified: an optimizer instance
    is rebuilt with the same class and per-group settings on the copy's parameters. With an
    optimizer, one uncounted step runs first so the counted step has its momentum / Adam
    state, like every step after the first.
    """
    shapes = [tuple(input_shapes)] if isinstance(input_shapes[0], int) else input_shapes
    shapes = [tuple(int(d) for d in s) for s in shapes]  # type: ignore[union-attr]
    original = model
    model = copy.deepcopy(model)  # never step or convert the caller's model
    params = list(model.parameters())
    if device == "meta" or (params and params[0].device != torch.device(device)):
        model = model.to(device=device)
    if dtype != torch.float32:
        model = model.to(dtype=dtype)
    inputs = [torch.randn(s, device=device, dtype=dtype) for s in shapes]
    opt = optimizer
    if isinstance(optimizer, str):
        opt = make_optimizer(optimizer, model.parameters())
    elif isinstance(optimizer, torch.optim.Optimizer):
        opt = _rebind_optimizer(optimizer, original, model)

    def step(counter: OpCounter | None) -> None:
        ctx = counter.phase if counter else (lambda _n: contextlib.nullcontext())
        with ctx("forward"):
            loss = _loss(model(*inputs))
        with ctx("backward"):
            loss.backward()
        if opt is not None:
            with ctx("optimizer"):
                opt.step()
            opt.zero_grad(set_to_none=True)

    counter = OpCounter(track_modules=track_modules)
    if train:
        model.train()
        if opt is not None:
            step(None)
        with counter:
            step(counter)
    else:
        model.eval()
        with torch.no_grad(), counter, counter.phase("forward"):
            model(*inputs)
    res = counter.result()
    res.batch_size = shapes[0][0] if shapes and shapes[0] else None
    return res
