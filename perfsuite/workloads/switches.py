"""Optimization switches: named, composable changes to how a workload trains.

`perfsuite run W --switch bf16,channels_last --switch lr_rule=linear` parses here. A workload
declares which switches it supports (`Workload.switches`); an unknown or unsupported switch is
a one-line ValueError. What each switch changed is read back from the live objects after the
run is built (runner/frameworks/assemble.py) and written into the record, so the record shows
the effect, not just the request. Pure Python: no torch import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perfsuite.workloads.progressive import parse_schedule


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    help: str
    choices: tuple[str, ...] = ()  # accepted values; empty: a flag or a number
    default_value: str | None = None  # the value a bare `--switch NAME` means
    number: bool = False
    text: bool = False  # a free value checked by the switch's own parser (a schedule)
    # sets the recipe's `extra[name]` (a workload technique): True/False for on/off, else
    # the value given
    recipe_flag: bool = False


SPECS: dict[str, SwitchSpec] = {
    s.name: s
    for s in (
        SwitchSpec("bf16", "autocast forward and loss to bfloat16 (parameters stay float32)"),
        SwitchSpec("fp16", "autocast to float16 with dynamic loss scaling (GradScaler)"),
        SwitchSpec("fp32", "float32 math, no autocast (overrides the precision a preset carries)"),
        SwitchSpec(
            "tf32",
            "TensorFloat-32 for float32 convolutions and matmuls on NVIDIA GPUs (on/off)",
            ("on", "off"),
            "on",
        ),
        SwitchSpec("channels_last", "NHWC memory format for the model and 4-D inputs"),
        SwitchSpec(
            "layout",
            "TensorFlow tensor layout: nhwc (its default) or nchw (GPUs only)",
            ("nhwc", "nchw"),
        ),
        SwitchSpec(
            "compile",
            "torch.compile the model (mode: default, reduce-overhead, max-autotune; the last two "
            "replay CUDA graphs on GPUs; off: no compile, overriding a preset's)",
            ("default", "reduce-overhead", "max-autotune", "off"),
            "default",
        ),
        SwitchSpec(
            "lr_rule",
            "learning rate rule when --batch-size differs from the recipe's: linear, sqrt, none",
            ("linear", "sqrt", "none"),
        ),
        SwitchSpec("label_smoothing", "label smoothing of the training loss (0..1)", number=True),
        SwitchSpec("tta", "test-time augmentation at evaluation (on/off)", ("on", "off"), "on"),
        SwitchSpec(
            "data",
            "where batches come from: device (whole set in memory) or workers (streaming loader)",
            ("device", "workers"),
        ),
        SwitchSpec(
            "activation",
            "activation of the fast cifar10 net's conv groups: gelu (airbench) or silu",
            ("gelu", "silu"),
            recipe_flag=True,
        ),
        SwitchSpec(
            "progressive_resize",
            "training image size per epoch range, e.g. 1-5:128/6-8:192/9-:224 "
            "(bare: the recipe's schedule; off: fixed size)",
            default_value="on",
            text=True,
        ),
        *(
            SwitchSpec(name, help, ("on", "off"), "on", recipe_flag=True)
            for name, help in (
                (
                    "muon",
                    "Muon (orthogonalized momentum): GPT's hidden matrices; fast cifar10's conv "
                    "filters, with SGD on the rest and no Lookahead (on/off)",
                ),
                ("rotary", "GPT: rotary position embedding instead of a learned table (on/off)"),
                ("qk_norm", "GPT: RMS-normalize queries and keys before attention (on/off)"),
                ("relu2", "GPT: ReLU squared instead of GELU in the MLP (on/off)"),
                ("untied_head", "GPT: an output head of its own, zero-initialized (on/off)"),
                ("softcap", "GPT: tanh soft-capping of the logits (on/off)"),
            )
        ),
    )
}

# Switches every PyTorch workload gets from the shared training step.
COMMON = frozenset({"bf16", "fp16", "fp32", "tf32", "channels_last", "compile", "lr_rule"})
# Switches a recipe may carry as its tuned defaults (recipe.extra keys of the same names); see
# `resolve_preset`.
PRESET_KEYS = ("precision", "compile", "channels_last")


@dataclass
class Switches:
    """The parsed switches of one run (None: not given, the workload's recipe decides)."""

    precision: str | None = None
    tf32: bool | None = None
    channels_last: bool = False
    compile: str | None = None
    lr_rule: str = "none"
    label_smoothing: float | None = None
    tta: bool | None = None
    data: str | None = None
    layout: str | None = None  # TensorFlow: nhwc | nchw
    progressive_resize: str | None = None  # "on" (the recipe's schedule), "off" or a schedule
    # recipe_flag switches given: name -> True/False (on/off) or the chosen value
    recipe_flags: dict[str, bool | str] = field(default_factory=dict)
    given: list[str] = field(default_factory=list)
    # what the user fixed, so a preset's tuned value does not replace it: "precision" (fp32,
    # bf16, fp16 given) and "compile" (any compile switch, off included)
    pinned: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "given": list(self.given),
            "precision": self.precision or "fp32",
            "tf32": self.tf32,
            "channels_last": self.channels_last,
            "compile": self.compile,
            "lr_rule": self.lr_rule,
            "label_smoothing": self.label_smoothing,
            "tta": self.tta,
            "data": self.data,
            "layout": self.layout,
            "progressive_resize": self.progressive_resize,
            "recipe_flags": dict(self.recipe_flags),
        }


def parse_switches(items: list[str], supported: frozenset[str], workload: str) -> Switches:
    """`items` as given on the command line (each may hold several, comma-separated)."""
    out = Switches()
    for raw in (part.strip() for item in items for part in item.split(",")):
        if not raw:
            continue
        name, sep, value = raw.partition("=")
        name = name.strip().replace("-", "_")
        spec = SPECS.get(name)
        if spec is None:
            raise ValueError(f"unknown switch {name!r}; known: {', '.join(sorted(SPECS))}")
        if name not in supported:
            have = ", ".join(sorted(supported)) or "none"
            raise ValueError(f"workload {workload} does not support switch {name!r} ({have})")
        value = _value(spec, value.strip() if sep else None)
        _apply(out, name, value)
        out.given.append(f"{name}={value}" if value is not None else name)
    return out


def _value(spec: SwitchSpec, value: str | None) -> str | None:
    if value is None:
        value = spec.default_value
        if value is None and (spec.choices or spec.number):
            raise ValueError(f"switch {spec.name!r} needs a value, e.g. {spec.name}=...")
        return value
    if spec.text:
        if value not in ("on", "off"):
            parse_schedule(value)
        return value
    if spec.number:
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"switch {spec.name!r}: {value!r} is not a number") from None
        if not 0.0 <= number <= 1.0:
            raise ValueError(f"switch {spec.name!r}: {value} is outside 0..1")
        return value
    if not spec.choices:
        raise ValueError(f"switch {spec.name!r} takes no value (got {value!r})")
    if value not in spec.choices:
        raise ValueError(f"switch {spec.name!r}: {value!r} is not one of {', '.join(spec.choices)}")
    return value


def _apply(out: Switches, name: str, value: str | None) -> None:
    if name in ("bf16", "fp16", "fp32"):
        if "precision" in out.pinned and (out.precision or "fp32") != name:
            raise ValueError(f"switches {out.precision or 'fp32'} and {name} exclude each other")
        out.precision = None if name == "fp32" else name
        out.pinned.add("precision")
    elif name == "tf32":
        out.tf32 = value == "on"
    elif name == "channels_last":
        if out.layout == "nchw":
            raise ValueError("switches channels_last and layout=nchw exclude each other")
        out.channels_last = True
    elif name == "layout":
        if out.channels_last and value == "nchw":
            raise ValueError("switches channels_last and layout=nchw exclude each other")
        out.layout = value
    elif name == "compile":
        out.compile = None if value == "off" else value
        out.pinned.add("compile")
    elif name == "lr_rule":
        out.lr_rule = str(value)
    elif name == "label_smoothing":
        out.label_smoothing = float(str(value))
    elif name == "tta":
        out.tta = value == "on"
    elif name == "data":
        out.data = value
    elif name == "progressive_resize":
        out.progressive_resize = value
    elif SPECS[name].recipe_flag:
        on_off = SPECS[name].choices == ("on", "off")
        out.recipe_flags[name] = value == "on" if on_off else str(value)


def resolve_preset(switches: Switches, extra: dict[str, Any], device: str) -> dict[str, Any]:
    """Apply what a recipe carries as tuned (`extra` keys `precision`, `compile`,
    `channels_last`) to `switches` where the user fixed nothing, for `device`; returns the
    record's `switches.preset` entry (empty when the recipe carries none of them).

    A preset is timed as it was tuned: on a GPU its precision (bf16/fp16) and compile mode
    apply. On a CPU both fall back (fp32, eager), because autocast to bf16/fp16 is emulated
    or slow on most CPUs and torch.compile's minutes of compilation exceed the seconds it
    could save there; the entry says which ran and why. A switch always wins."""
    tuned = {k: extra.get(k) for k in PRESET_KEYS if extra.get(k) not in (None, "")}
    if not tuned:
        return {}
    gpu = not str(device).startswith("cpu")
    why: list[str] = []
    want = str(tuned.get("precision", "fp32"))
    if "precision" in switches.pinned:
        why.append(f"precision {switches.precision or 'fp32'}: given by a switch")
    elif want in ("bf16", "fp16") and gpu:
        switches.precision = want
        why.append(f"precision {want}: the recipe's, as tuned")
    elif want in ("bf16", "fp16"):
        why.append(
            f"precision fp32: the recipe's {want} is for GPUs; on a CPU autocast to {want} "
            "is emulated or slow, so it falls back to fp32 (--switch to force it)"
        )
    mode = tuned.get("compile")
    if "compile" in switches.pinned:
        why.append(f"compile {switches.compile or 'off'}: given by a switch")
    elif mode and gpu:
        switches.compile = str(mode)
        why.append(f"compile {mode}: the recipe's, as tuned")
    elif mode:
        why.append(
            f"compile off: the recipe's compile={mode} is for GPUs; on a CPU its compilation "
            "takes longer than the training it would speed up (--switch compile=... to force it)"
        )
    if tuned.get("channels_last") and not switches.channels_last:
        switches.channels_last = True
        why.append("channels_last: the recipe's, as tuned")
    return {
        "tuned": tuned,
        "device": str(device),
        "precision": switches.precision or "fp32",
        "compile": switches.compile,
        "channels_last": switches.channels_last,
        "why": why,
        "source": "recipe defaults resolved for the device (switches.resolve_preset)",
    }


def scaled_lr(lr: float, base_batch: int, batch: int, rule: str) -> float:
    """The learning rate for `batch` under `rule`, from `lr` tuned at `base_batch`."""
    if rule == "linear":
        return lr * batch / base_batch
    if rule == "sqrt":
        return lr * (batch / base_batch) ** 0.5
    return lr


def describe(supported: frozenset[str]) -> str:
    """Help text: the switches a workload supports, one per line."""
    lines = []
    for name in sorted(supported):
        spec = SPECS[name]
        values = f"={'|'.join(spec.choices)}" if spec.choices else ""
        if spec.choices and spec.default_value:
            values = f"[{values}] (bare: {spec.default_value})"
        values = f" {values}" if values else ""
        values = " =X" if spec.number else values
        values = " [=on|off|SCHEDULE] (bare: on)" if spec.text else values
        lines.append(f"  {name}{values}: {spec.help}")
    return "\n".join(lines)
