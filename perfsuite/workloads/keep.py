"""What a detour puts back beyond the train state: the attributes a workload and its data
source keep between steps, `state.extras`, and the Python and NumPy RNGs.

Why: warm-up, the FLOP count and the profile window call `train_step` and `train_batches`
off the books; a workload that counts its steps in an attribute, flips an augmentation by
epoch, or keeps an EMA in `state.extras` would otherwise leave the detour changed. What is
saved on entry, by kind:

- every attribute's binding (an attribute rebound, added or deleted is put back);
- tensors and NumPy arrays up to `COPY_BYTES` by value; larger ones (datasets held in
  memory) are watched instead, and one changed in place is an error naming it;
- objects with `state_dict`/`load_state_dict` (modules, optimizers, EMA helpers) through
  them; random generators through their state; lists, dicts and sets by contents;
- other objects: their own attributes' bindings, one level down.

An iterator held in an attribute (a loader's position) cannot be put back: entering the
detour raises `Unrestorable` naming it.
"""

from __future__ import annotations

import copy
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

COPY_BYTES = 16 << 20  # tensors larger than this are watched, not copied (held data sets)
_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range, type)


class Unrestorable(ValueError):
    """A workload keeps state a detour cannot put back."""


def save(owners: Iterable[Any], extras: Any, skip: Iterable[Any]) -> Callable[[], None]:
    """Save what `owners` (the workload, its data source) and `extras` hold; the function
    that puts it back. `skip`: objects restored elsewhere (model, optimizer, scheduler)."""
    undo: list[Callable[[], None]] = []
    seen = {id(o) for o in skip if o is not None}
    for owner in owners:
        if owner is not None and hasattr(owner, "__dict__") and id(owner) not in seen:
            seen.add(id(owner))
            _attributes(owner, type(owner).__name__, 1, undo, seen)
    if extras is not None:
        _value(extras, "state.extras", 1, undo, seen)
    py_rng = random.getstate()
    undo.append(lambda: random.setstate(py_rng))
    np = sys.modules.get("numpy")  # only when something imported it
    if np is not None:
        np_rng = np.random.get_state()
        undo.append(lambda: np.random.set_state(np_rng))

    def restore() -> None:
        for step in reversed(undo):
            step()

    return restore


def _attributes(obj: Any, where: str, depth: int, undo: list, seen: set[int]) -> None:
    bound = dict(vars(obj))

    def rebind() -> None:
        now = vars(obj)
        for name in [n for n in now if n not in bound]:
            delattr(obj, name)
        for name, value in bound.items():
            if now.get(name, bound) is not value:
                setattr(obj, name, value)

    undo.append(rebind)
    if depth > 1:  # one level down: bindings only
        return
    for name, value in bound.items():
        _value(value, f"{where}.{name}", depth, undo, seen)


def _value(value: Any, where: str, depth: int, undo: list, seen: set[int]) -> None:
    if isinstance(value, _PLAIN) or (callable(value) and not hasattr(value, "state_dict")):
        return
    if id(value) in seen:
        return
    if isinstance(value, Iterator):
        raise Unrestorable(
            f"{where} holds an iterator ({type(value).__name__}) whose position a detour "
            "(warm-up, FLOP count, profile window) cannot put back: create it inside "
            "train_batches or train_step instead of keeping it"
        )
    seen.add(id(value))
    if _is_array(value):
        _array(value, where, undo)
    elif _has(value, "state_dict", "load_state_dict"):
        state = copy.deepcopy(value.state_dict())
        undo.append(lambda: value.load_state_dict(state))
    elif _has(value, "get_state", "set_state"):  # torch.Generator, numpy RandomState
        state = value.get_state()
        undo.append(lambda: value.set_state(state))
    elif _has(value, "getstate", "setstate"):  # random.Random
        state = value.getstate()
        undo.append(lambda: value.setstate(state))
    elif isinstance(value, dict):
        items = dict(value)
        undo.append(lambda: (value.clear(), value.update(items)))
        for k, v in items.items():
            _value(v, f"{where}[{k!r}]", depth, undo, seen)
    elif isinstance(value, list):
        elems = list(value)
        undo.append(lambda: value.__setitem__(slice(None), elems))
        for i, v in enumerate(elems):
            _value(v, f"{where}[{i}]", depth, undo, seen)
    elif isinstance(value, set):
        members = set(value)
        undo.append(lambda: (value.clear(), value.update(members)))
    elif hasattr(value, "__dict__"):
        _attributes(value, where, depth + 1, undo, seen)


def _has(value: Any, *names: str) -> bool:
    return all(callable(getattr(value, n, None)) for n in names)


def _is_array(value: Any) -> bool:
    kind = type(value)
    return (kind.__module__.startswith("torch") and kind.__name__ in ("Tensor", "Parameter")) or (
        kind.__module__ == "numpy" and kind.__name__ == "ndarray"
    )


def _array(value: Any, where: str, undo: list) -> None:
    """Small arrays by value; large ones watched through torch's in-place version counter."""
    if value.nbytes <= COPY_BYTES:
        saved = value.detach().clone() if hasattr(value, "detach") else value.copy()

        def put_back() -> None:
            if hasattr(value, "detach"):
                import torch

                with torch.no_grad():
                    value.copy_(saved)
            else:
                value[...] = saved

        undo.append(put_back)
        return
    version = getattr(value, "_version", None)

    def check() -> None:
        if version is not None and value._version != version:
            raise Unrestorable(
                f"{where}: a {value.nbytes / 2**20:.0f} MiB tensor changed in place during a "
                "detour (warm-up, FLOP count, profile window); tensors this large are "
                "checked, not copied: keep mutable state in smaller tensors"
            )

    undo.append(check)
