"""What a study is: its kind, workload, options and the run options every configuration shares.

One `StudySpec` comes from the command line, from a TOML study file or from a study folder's
`study.json`; all three go through `spec_from_dict`, so a bad value gets the same one-line
error naming the file and the field wherever it was written. The [run] table's keys and checks
come from `RunOptions` (runner/options.py), the one source of a run's options. Pure Python: no
torch import.
"""

from __future__ import annotations

from dataclasses import Field, asdict, dataclass, field, make_dataclass
from functools import partial
from pathlib import Path
from typing import Any

from perfsuite.runner.options import Flag, default_of, option_flags

KINDS = ("lesion", "factor", "batch", "scaling")
LR_RULES = ("linear", "sqrt", "none")
# Study-level option `batch=N`: the batch size, not a switch (the LR follows the lr_rule switch).
BATCH_OPTION = "batch"


class StudyError(ValueError):
    """A study file, folder or plan that cannot be used. The message is one line."""


def study_settings() -> list[tuple[Field, Flag]]:
    """(RunOptions field, flag) of the options a study file's [run] table holds: shared by
    every run of the study."""
    return [(f, flag) for f, flag in option_flags() if flag.study and ":" not in flag.study]


# Run options shared by every configuration of a study (see `perfsuite run --help`): one field
# per [run] key, named by the key, with the option's default; built from RunOptions (the one
# source), so a study file takes each option a study may share and nothing else.
RunSettings = make_dataclass(
    "RunSettings",
    [
        (flag.study, f.type, field(default_factory=partial(default_of, f)))
        for f, flag in study_settings()
    ],
    frozen=True,
)


@dataclass(frozen=True)
class EvalSettings:
    """Generalization checks run on each run's threshold model after it finishes (see
    docs/generalization.md): so a lesion study shows which optimization costs robustness."""

    corruptions: bool = False
    limit: int | None = None  # corrupt only the first N own test images (CPU time)
    families: list[str] = field(default_factory=list)  # empty: every family


@dataclass(frozen=True)
class StudySpec:
    """A lesion, factor, batch or scaling study as written by the user."""

    kind: str
    workload: str
    options: list[str] = field(default_factory=list)  # lesion/factor: switch items, batch=N
    sizes: list[int] = field(default_factory=list)  # batch: the batch sizes
    lr_rule: str = "linear"  # batch, scaling: how the learning rate follows the batch size
    nprocs: list[int] = field(default_factory=list)  # scaling: data-parallel process counts
    switches: list[str] = field(default_factory=list)  # applied to every configuration
    repeats: int = 1
    threshold: float | None = None
    seed: int = 0
    run: Any = field(default_factory=RunSettings)  # a RunSettings
    eval: EvalSettings = field(default_factory=EvalSettings)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_TOP = {f: None for f in StudySpec.__dataclass_fields__}
_RUN = {f: None for f in RunSettings.__dataclass_fields__}
_EVAL = {f: None for f in EvalSettings.__dataclass_fields__}


def _fail(origin: str, where: str, why: str) -> StudyError:
    return StudyError(f"{origin}: field {where}: {why}")


def _int(value: Any, origin: str, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(origin, where, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise _fail(origin, where, f"must be >= {minimum}, got {value}")
    return value


def _int_list(value: Any, origin: str, where: str) -> list[int]:
    """Positive integers; a string is split at commas (the command-line form, `1,2,4`)."""
    if isinstance(value, str):
        try:
            value = [int(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise _fail(origin, where, f"expected integers, got {value!r}") from None
    if not isinstance(value, list):
        raise _fail(origin, where, f"expected a list of integers, got {value!r}")
    return [_int(v, origin, f"{where}[{i}]", 1) for i, v in enumerate(value)]


def _str_list(value: Any, origin: str, where: str) -> list[str]:
    """A list of strings; a single string is split at commas (the command-line form)."""
    if isinstance(value, str):
        value = [v for v in (p.strip() for p in value.split(",")) if v]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(origin, where, f"expected a list of non-empty strings, got {value!r}")
    return [v.strip() for v in value]


def _opt_str(value: Any, origin: str, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _fail(origin, where, f"expected a string, got {value!r}")
    return value


def _bool(value: Any, origin: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(origin, where, f"expected true or false, got {value!r}")
    return value


def _setting(value: Any, default: Any, flag: Flag, origin: str, where: str) -> Any:
    """One [run] value, checked by its option's value kind (runner/options.py)."""
    kind = flag.value
    if value is None:  # JSON null (a study.json): the option's default
        return default
    if kind in ("int", "positive_int"):
        return _int(value, origin, where, 1 if kind == "positive_int" else None)
    if kind == "switch":
        return _bool(value, origin, where)
    if kind == "list":
        return _str_list(value, origin, where) if value else []
    if kind == "choice":
        if value not in flag.choices:
            known = ", ".join(flag.choices)
            raise _fail(origin, where, f"expected one of {known}, got {value!r}")
        return value
    if kind == "text":
        return _opt_str(value, origin, where) or default
    raise _fail(origin, where, f"a {kind} option is not a study setting")  # pragma: no cover


def _run_settings(raw: Any, origin: str) -> Any:
    if raw is None:
        return RunSettings()
    if not isinstance(raw, dict):
        raise _fail(origin, "run", f"expected a table, got {raw!r}")
    for key in raw:
        if key not in _RUN:
            raise _fail(origin, f"run.{key}", f"unknown field; known: {', '.join(_RUN)}")
    values = {}
    for f, flag in study_settings():
        key = str(flag.study)
        values[key] = _setting(raw.get(key), default_of(f), flag, origin, f"run.{key}")
    return RunSettings(**values)


def _eval_settings(raw: Any, origin: str) -> EvalSettings:
    if raw is None:
        return EvalSettings()
    if not isinstance(raw, dict):
        raise _fail(origin, "eval", f"expected a table, got {raw!r}")
    for key in raw:
        if key not in _EVAL:
            raise _fail(origin, f"eval.{key}", f"unknown field; known: {', '.join(_EVAL)}")
    limit = raw.get("limit")
    return EvalSettings(
        corruptions=_bool(raw.get("corruptions", False), origin, "eval.corruptions"),
        limit=None if limit is None else _int(limit, origin, "eval.limit", 2),
        families=_str_list(raw.get("families", []), origin, "eval.families")
        if raw.get("families")
        else [],
    )


def spec_from_dict(raw: Any, origin: str) -> StudySpec:
    """Validate a study as a dict (TOML or JSON); errors name `origin` and the field."""
    if not isinstance(raw, dict):
        raise _fail(origin, "(top level)", "expected a table of study fields")
    for key in raw:
        if key not in _TOP:
            raise _fail(origin, key, f"unknown field; known: {', '.join(_TOP)}")
    for key in ("kind", "workload"):
        if key not in raw:
            raise _fail(origin, key, "missing")
    kind = raw["kind"]
    if kind not in KINDS:
        raise _fail(origin, "kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    workload = _opt_str(raw["workload"], origin, "workload")
    if not workload:
        raise _fail(origin, "workload", "must not be empty")
    options = _str_list(raw.get("options", []), origin, "options")
    sizes = _int_list(raw.get("sizes", []), origin, "sizes")
    nprocs = _int_list(raw.get("nprocs", []), origin, "nprocs")
    lr_rule = raw.get("lr_rule", "linear")
    if lr_rule not in LR_RULES:
        raise _fail(origin, "lr_rule", f"{lr_rule!r} is not one of {', '.join(LR_RULES)}")
    threshold = raw.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise _fail(origin, "threshold", f"expected a number, got {threshold!r}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise _fail(origin, "threshold", f"{threshold} is not a fraction in [0, 1]")
        threshold = float(threshold)
    if kind == "scaling":
        if not nprocs:
            raise _fail(origin, "nprocs", "a scaling study needs process counts, e.g. [1, 2]")
        if len(set(nprocs)) != len(nprocs):
            raise _fail(origin, "nprocs", f"repeated process count in {nprocs}")
        if options or sizes:
            raise _fail(origin, "options" if options else "sizes", "a scaling study takes nprocs")
    elif nprocs:
        raise _fail(origin, "nprocs", f"only a scaling study takes nprocs, not a {kind} study")
    if kind == "batch":
        if not sizes:
            raise _fail(origin, "sizes", "a batch study needs at least one batch size")
        if len(set(sizes)) != len(sizes):
            raise _fail(origin, "sizes", f"repeated batch size in {sizes}")
        if options:
            raise _fail(origin, "options", "a batch study takes sizes, not options")
    elif kind != "scaling":
        if not options:
            raise _fail(origin, "options", f"a {kind} study needs at least one option")
        if sizes:
            raise _fail(origin, "sizes", f"only a batch study takes sizes, not a {kind} study")
    return StudySpec(
        kind=kind,
        workload=workload,
        options=options,
        sizes=sizes,
        lr_rule=lr_rule,
        nprocs=nprocs,
        switches=_str_list(raw.get("switches", []), origin, "switches"),
        repeats=_int(raw.get("repeats", 1), origin, "repeats", 1),
        threshold=threshold,
        seed=_int(raw.get("seed", 0), origin, "seed", 0),
        run=_run_settings(raw.get("run"), origin),
        eval=_eval_settings(raw.get("eval"), origin),
    )


def load_study_file(path: str | Path) -> StudySpec:
    """A TOML study file (see docs/studies.md)."""
    try:
        import tomllib  # Python >= 3.11
    except ImportError:
        raise StudyError(f"{path}: study files need Python >= 3.11 (tomllib)") from None
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise StudyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return spec_from_dict(raw, str(path))
