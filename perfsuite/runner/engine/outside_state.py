"""What a user's step changes outside the state a detour restores.

A detour (FLOP count, profile window) replays the user's step and then restores the model,
the optimizer, scheduler, scaler and RNG state (perfsuite/workloads/state.py), never module
globals or closure cells. A step that writes those, or advances an iterator it reaches through
them, would leave training changed by the replay: nanoGPT's `global X, Y; X, Y =
get_batch('train')` inside the step prefetches the next batch, and every replay skips one.
`outside_writes` reads the step's bytecode before the first detour, so such a step is refused
the detours with a warning instead of trained differently in silence.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

STORES = {"STORE_GLOBAL": "global", "DELETE_GLOBAL": "global", "STORE_DEREF": "closure cell"}


def _function(fn: Any) -> types.FunctionType | None:
    """The Python function a call of `fn` runs first: through partials, bound methods and
    objects with `__call__`; None for a builtin or a C extension callable."""
    for _ in range(8):  # partial(method) and the like nest a few levels at most
        if isinstance(fn, types.FunctionType):
            return fn
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif not isinstance(fn, type) and isinstance(_call_of(type(fn)), types.FunctionType):
            fn = _call_of(type(fn))  # an object with a Python __call__
        else:
            return None
    return None


def step_code(fn: Any) -> types.CodeType | None:
    """The code object a call of `fn` runs first (None for a builtin): a step re-wrapped on
    each call (a new partial or bound method) has the same one, so it is read once."""
    func = _function(fn)
    return func.__code__ if func is not None else None


def _call_of(klass: type) -> Any:
    """The `__call__` a class defines or inherits, or None."""
    return next((vars(k)["__call__"] for k in klass.__mro__ if "__call__" in vars(k)), None)


def _advanced(value: Any) -> bool:
    """An iterator or generator: calling a step that reaches it may advance it."""
    return isinstance(value, Iterator)


def outside_writes(fn: Callable[..., Any]) -> list[str]:
    """What a call of `fn` changes that no detour restores, one phrase each ("global `X`",
    "closure cell `it`", "iterator `batches` (a global)"), in bytecode order; [] when
    nothing is found. Reads `fn`'s own code only: helpers it calls are not followed (a
    helper's writes are the caller's to declare with detour_safe=False)."""
    func = _function(fn)
    if func is None:
        return []
    code = func.__code__
    free = set(code.co_freevars)
    found: list[str] = []
    for ins in dis.get_instructions(code):
        kind = STORES.get(ins.opname)
        if kind == "closure cell" and ins.argval not in free:
            continue  # a cell of the step's own locals: made anew on each call
        if kind and f"{kind} `{ins.argval}`" not in found:
            found.append(f"{kind} `{ins.argval}`")
    cells = dict(zip(code.co_freevars, func.__closure__ or (), strict=False))
    for name in code.co_names:  # globals (and attributes: only a global's value is read)
        if name in func.__globals__ and _advanced(func.__globals__[name]):
            found.append(f"iterator `{name}` (a global)")
    for name, cell in cells.items():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _advanced(value):
            found.append(f"iterator `{name}` (a closure cell)")
    return found


def refusal(found: list[str]) -> str:
    """The one-line warning for a step with outside writes: what, and the way out."""
    return (
        f"perfsuite.track: the step writes {', '.join(found)}, which detours replaying it "
        "would change (they restore model, optimizer and RNG state only): no FLOP count or "
        "profile window is taken; pass the batch into run.step as an argument, or call "
        "run.step(..., detour_safe=False) to say so and silence this"
    )
