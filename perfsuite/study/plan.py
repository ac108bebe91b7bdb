"""Which configurations a study runs.

Lesion: the full recipe (every option on), then the full recipe minus each option. Factor: the
baseline (no option), then each option added cumulatively in the given order. Batch: one
configuration per batch size, with the learning rate scaled by the study's lr_rule. Scaling:
one configuration per data-parallel process count, the per-process batch fixed (the global
batch grows with the processes) and the learning rate scaled to it by the lr_rule. Every
configuration's switches are parsed against what the workload declares before anything runs,
so an unsupported switch (or bf16 with fp16 in one full recipe) is an error up front.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perfsuite.study.spec import BATCH_OPTION, StudyError, StudySpec
from perfsuite.workloads.switches import parse_switches


@dataclass(frozen=True)
class Option:
    """One study option: a switch item (`bf16`, `label_smoothing=0.2`) or `batch=N`."""

    text: str
    name: str
    batch_size: int | None = None


@dataclass(frozen=True)
class Config:
    """One configuration of a study: the switches and batch size its runs use."""

    index: int
    name: str  # "full", "-bf16", "baseline", "+bf16", "batch=64"
    description: str
    switches: tuple[str, ...]
    batch_size: int | None
    folder: str  # relative to the study folder
    nproc: int = 1  # data-parallel processes of each run (scaling studies)

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.name,
            "description": self.description,
            "switches": list(self.switches),
            "batch_size": self.batch_size,
            "folder": self.folder,
            "nproc": self.nproc,
        }


def parse_option(text: str) -> Option:
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if name == BATCH_OPTION:
        try:
            size = int(value)
        except ValueError:
            size = 0
        if not sep or size < 1:
            raise StudyError(f"option {text!r}: batch needs a positive integer, e.g. batch=256")
        return Option(text, name, size)
    return Option(text.strip(), name)


def _folder(index: int, name: str) -> str:
    slug = name.replace("+", "plus-").replace("-", "minus-", 1 if name.startswith("-") else 0)
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", slug).strip("-") or "config"
    return f"configs/{index:02d}-{slug}"


def _config(
    index: int, name: str, description: str, spec: StudySpec, chosen: list[Option]
) -> Config:
    switches = [*spec.switches, *(o.text for o in chosen if o.batch_size is None)]
    sizes = [o.batch_size for o in chosen if o.batch_size is not None]
    batch = sizes[-1] if sizes else spec.run.batch_size
    return Config(index, name, description, tuple(switches), batch, _folder(index, name))


def _switch_name(item: str) -> str:
    return item.partition("=")[0].strip().replace("-", "_")


def _check_named_once(spec: StudySpec, options: list[Option]) -> None:
    """A switch set in two places (switches and an option, or switches and the study's
    lr_rule) would leave one silently overriding the other in some configurations, so the
    `-X` of a lesion could still have X on: a one-line error instead."""
    fixed = [_switch_name(p) for item in spec.switches for p in item.split(",") if p.strip()]
    twice = sorted({n for n in fixed if fixed.count(n) > 1})
    if twice:
        raise StudyError(f"switch {twice[0]!r} is named more than once in switches (--switch)")
    if spec.kind in ("batch", "scaling") and "lr_rule" in fixed:
        raise StudyError(
            f"switch 'lr_rule' in switches (--switch) conflicts with the study's "
            f"lr_rule={spec.lr_rule}: set it with lr_rule (--lr-rule) only"
        )
    both = [o.name for o in options if o.name in fixed]
    if both:
        raise StudyError(
            f"option {both[0]!r} is also in switches (--switch), which apply to every "
            "configuration: name it in one place"
        )


def plan(spec: StudySpec, supported: frozenset[str], workload: str) -> list[Config]:
    """The configurations of `spec`, in run order; the first is the reference."""
    options = [parse_option(t) for t in spec.options]
    _check_named_once(spec, options)
    if spec.kind == "batch":
        configs = [
            Config(
                i,
                f"batch={size}",
                f"batch size {size}, learning rate scaled by lr_rule={spec.lr_rule}",
                (*spec.switches, f"lr_rule={spec.lr_rule}"),
                size,
                _folder(i, f"batch-{size}"),
            )
            for i, size in enumerate(spec.sizes)
        ]
    elif spec.kind == "scaling":
        per_rank = spec.run.batch_size
        batch = f"{per_rank}" if per_rank else "the recipe's batch"
        configs = [
            Config(
                i,
                f"nproc={n}",
                f"{n} data-parallel process(es), {batch} per process (global batch x{n}), "
                f"learning rate scaled by lr_rule={spec.lr_rule}",
                (*spec.switches, f"lr_rule={spec.lr_rule}"),
                per_rank,
                _folder(i, f"nproc-{n}"),
                n,
            )
            for i, n in enumerate(spec.nprocs)
        ]
    else:
        names = [o.name for o in options]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise StudyError(f"option {repeated[0]!r} is named more than once")
        if spec.kind == "lesion":
            configs = [_config(0, "full", "full recipe: every option on", spec, options)]
            for i, o in enumerate(options, 1):
                rest = [x for x in options if x is not o]
                configs.append(_config(i, f"-{o.text}", f"full recipe minus {o.text}", spec, rest))
        else:
            configs = [_config(0, "baseline", "baseline: no option", spec, [])]
            for i, o in enumerate(options, 1):
                desc = "baseline + " + " + ".join(x.text for x in options[:i])
                configs.append(_config(i, f"+{o.text}", desc, spec, options[:i]))
    for c in configs:
        try:
            parse_switches(list(c.switches), supported, workload)
        except ValueError as exc:
            raise StudyError(f"configuration {c.name!r}: {exc}") from None
    return configs
