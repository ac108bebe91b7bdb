"""`perfsuite flops MODEL`: counted FLOPs and modeled bytes of one forward pass or training step.

Counting runs on the `meta` device by default (shapes only, nothing computed), so even
ResNet-50 at 224x224 takes about a second on a laptop CPU.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    add_top_flag,
    int64,
    print_json,
    status,
    top_rows,
)

CONV_LINEAR = ("convolution", "matmul")
_DIMS_X = re.compile(r"\s*\d+(?:\s*x\s*\d+)+\s*")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "flops",
        help="count FLOPs and model bytes per op/module of a network (forward or train step)",
        description=(
            "Count the FLOPs (multiply-add = 2 FLOP) and model the compulsory memory traffic "
            "(every op's inputs and outputs moved once, in bytes) of one forward pass or one "
            "training step (forward + cross-entropy loss + backward + optimizer). MODEL is "
            "builtin:NAME (resnet18, resnet50, resnet20, resnet56), torchvision:NAME, "
            "workload:NAME or package.module:callable. Ops without a formula are listed as "
            "unknown, never counted as zero silently."
        ),
    )
    p.add_argument("model", metavar="MODEL", help="model spec, e.g. builtin:resnet50")
    p.add_argument(
        "--input",
        action="append",
        metavar="SHAPE",
        help="input shape, per example (3,224,224) or with the batch first (1,3,224,224); "
        "repeat for several inputs; default: the model's own. Which was assumed is printed",
    )
    p.add_argument(
        "--batch", type=int64, help="batch size (default 1, or the first dim of a full --input)"
    )
    p.add_argument(
        "--train", action="store_true", help="count a full training step, not a forward pass"
    )
    p.add_argument(
        "--optimizer",
        choices=("sgd", "adam", "adamw"),
        help="optimizer of the training step (default sgd: momentum 0.9, Nesterov, wd 5e-4); "
        "implies --train",
    )
    p.add_argument(
        "--by",
        choices=("op", "module", "family"),
        default="op",
        help="breakdown table: per aten op and phase (default), per innermost module, per family",
    )
    p.add_argument(
        "--device",
        default="meta",
        help="device to count on: meta (default, computes nothing), cpu, cuda",
    )
    add_top_flag(p, "rows of the breakdown table")
    add_json_flag(p)
    p.set_defaults(func=run)


def parse_shape(text: str) -> tuple[int, ...]:
    """ "3,224,224" or "3x224x224" (optionally in parentheses) -> (3, 224, 224).

    One separator per shape: with a comma, `x` is not one, so "3,224,2x24" is an error rather
    than the 4-D 3x224x2x24, and "3,x" is not read as (3,).
    """
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    sep = "," if "," in body else "x"
    if sep == "," and body.rstrip().endswith(","):  # a Python tuple: (16,) or 3,224,224,
        body = body.rstrip()[:-1]
    example = "3,224,224" if sep == "," else "3x224x224"
    shape: list[int] = []
    for n, part in enumerate(body.split(sep), start=1):
        part = part.strip()
        if not part:
            raise CLIError(f"--input {text!r}: part {n} is empty; expected integers like {example}")
        if not (part.isascii() and part.isdigit()):
            mixed = _DIMS_X.fullmatch(part) is not None  # "2x24" beside commas
            hint = " (use ',' or 'x' between dimensions, not both)" if mixed else ""
            raise CLIError(
                f"--input {text!r}: part {part!r} is not a positive integer{hint}; "
                f"expected integers like {example}"
            )
        if int(part) == 0:
            raise CLIError(f"--input {text!r}: part {part!r} is zero; dimensions must be positive")
        shape.append(int(part))
    return tuple(shape)


def run(args: argparse.Namespace) -> int:
    from perfsuite.models import ModelSpecError, resolve_model

    if args.batch is not None and args.batch <= 0:
        raise CLIError(f"--batch {args.batch}: must be a positive integer")
    given = [parse_shape(s) for s in args.input or []]  # refused before the model is built
    try:
        resolved = resolve_model(args.model)
    except ModelSpecError as exc:
        raise CLIError(str(exc)) from None
    if given:
        shapes = given
    elif resolved.input_shape:
        shapes = [tuple(resolved.input_shape)]
    else:
        raise CLIError(f"{args.model}: input shape unknown; give --input, e.g. 3,224,224")
    full, assumed = full_shapes(shapes, args.batch, resolved.input_shape, resolved.model)
    args.batch = full[0][0]
    status(f"input: {assumed}")
    train = bool(args.train or args.optimizer)
    optimizer = (args.optimizer or "sgd") if train else None
    mode = f"training step ({optimizer})" if train else "forward (eval mode)"
    status(f"counting {resolved.description} {mode} on {args.device} ...")

    from perfsuite.flops.torch_counter import count_model

    try:
        res = count_model(
            resolved.model,
            full,
            train=train,
            optimizer=optimizer,
            device=args.device,
            track_modules=args.by == "module",
        )
    except (RuntimeError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CLIError(f"{args.model}: counting failed on {args.device}: {first}") from None
    summary = _summary(args, resolved.description, full, train, optimizer, res)
    summary["input_assumption"] = assumed
    if args.json:
        print_json(summary)
    else:
        print(render(summary, args.by, top_rows(args.top)))
    return 0


def expected_rank(model: Any) -> int | None:
    """Full input rank (batch included) the model's first conv layer needs, if it has one."""
    for module in model.modules():
        name = type(module).__name__
        if name in ("Conv1d", "Conv2d", "Conv3d"):
            return int(name[4]) + 2
        if name in ("Linear", "Embedding"):
            return None
    return None


def full_shapes(
    shapes: list[tuple[int, ...]],
    batch: int | None,
    known: tuple[int, ...] | None,
    model: Any,
) -> tuple[list[tuple[int, ...]], str]:
    """Shapes with the batch dimension, and a sentence saying what was assumed.

    A shape one dimension longer than the model's own per-example shape (or than its first
    conv layer takes without a batch) already holds the batch."""
    per_example_rank = len(known) if known else None
    if per_example_rank is None:
        rank = expected_rank(model)
        per_example_rank = rank - 1 if rank else None
    first = shapes[0]
    if per_example_rank is not None and len(first) == per_example_rank + 1:
        if batch is not None and batch != first[0]:
            raise CLIError(
                f"--input {','.join(map(str, first))} has batch {first[0]} but --batch {batch}"
            )
        dims = "x".join(map(str, first))
        return [tuple(s) for s in shapes], f"{dims} read as a full shape (batch {first[0]} first)"
    b = batch or 1
    dims = "x".join(map(str, first))
    why = "" if per_example_rank is not None else " (model rank unknown: assumed per example)"
    return [(b, *s) for s in shapes], f"{dims} read as one example; batch {b} added{why}"


def _summary(args, description, shapes, train, optimizer, res) -> dict[str, Any]:
    conv_linear = res.flops_of(*CONV_LINEAR)
    return {
        "model": description,
        "input_shapes": [list(s) for s in shapes],
        "batch_size": args.batch,
        "mode": "train" if train else "forward",
        "optimizer": optimizer,
        "device": args.device,
        "dtype": res.dtype,
        "provenance": {"flops": "counted", "bytes": "modeled"},
        "total_flops": res.total_flops,
        "total_bytes": res.total_bytes,
        "conv_linear_flops": conv_linear,
        "other_flops": res.total_flops - conv_linear,
        "by_family": res.by_family(),
        "by_phase": res.by_phase(),
        "per_op": [vars(r) for r in sorted(res.per_op, key=lambda r: -r.flops)],
        "per_module": [vars(m) for m in res.per_module],
        "unknown_ops": res.unknown_ops,
    }


def _share(part: float, total: float) -> str:
    from perfsuite.fmt import pct

    return pct(part / total) if total else "n/a"


def render(s: dict[str, Any], by: str, top: int) -> str:
    from perfsuite.fmt import si, table

    total = s["total_flops"]
    shapes = ", ".join("x".join(str(d) for d in sh) for sh in s["input_shapes"])
    lines = [
        f"{s['model']}  input {shapes}  {s['mode']}"
        + (f" ({s['optimizer']})" if s["optimizer"] else "")
        + f"  dtype {s['dtype'] or '?'}",
        f"total FLOPs (counted):        {si(total, 'FLOP')}",
        f"  conv + linear/matmul give:  {si(s['conv_linear_flops'], 'FLOP')} "
        f"({_share(s['conv_linear_flops'], total)})",
        f"  all other ops add:          {si(s['other_flops'], 'FLOP')} "
        f"({_share(s['other_flops'], total)})",
        f"bytes moved (modeled):        {si(s['total_bytes'], 'B')}  "
        f"(arithmetic intensity {total / s['total_bytes']:.1f} FLOP/byte)"
        if s["total_bytes"]
        else "bytes moved (modeled):        0 B",
        "",
    ]
    if by == "family":
        rows = [
            [fam, si(v["flops"], "FLOP"), _share(v["flops"], total), si(v["bytes"], "B"),
             int(v["calls"])]
            for fam, v in s["by_family"].items()
        ]  # fmt: skip
        lines.append(table(rows, ["family", "FLOPs", "share", "bytes", "calls"], "lrrrr"))
    elif by == "module":
        mods = sorted(s["per_module"], key=lambda m: -m["flops"])[:top]
        rows = [
            [m["module"], m["calls"], si(m["flops"], "FLOP"), _share(m["flops"], total),
             si(m["bytes"], "B")]
            for m in mods
        ]  # fmt: skip
        lines.append(table(rows, ["module (own ops)", "ops", "FLOPs", "share", "bytes"], "lrrrr"))
    else:
        rows = [
            [r["op"], r["family"], r["phase"], r["calls"], si(r["flops"], "FLOP"),
             _share(r["flops"], total), si(r["bytes"], "B")]
            for r in s["per_op"][:top]
        ]  # fmt: skip
        head = ["op", "family", "phase", "calls", "FLOPs", "share", "bytes"]
        lines.append(table(rows, head, "lllrrrr"))
    if s["unknown_ops"]:
        unknown = ", ".join(f"{u['op']} x{u['calls']}" for u in s["unknown_ops"])
        lines += ["", f"unknown ops (no formula, not counted): {unknown}"]
    return "\n".join(lines)
