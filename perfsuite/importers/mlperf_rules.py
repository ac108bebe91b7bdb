"""MLPerf quality targets and run counts, read from the installed `mlperf-logging` package.

Why not a table of our own: MLCommons changes benchmarks and targets every round, and its
`mlperf-logging` package ships them per ruleset (`compliance_checker/<usage>_<X.Y.Z>/`). A
benchmark's target is the `ATLEAST_ONE_CHECK` of its closed-division rule file: at least one
evaluation must pass it. That check is a conjunction of bounds on the evaluated value (or on
its named components, Stable Diffusion's FID and CLIP); it is read here with `ast`, never
evaluated. The bound that is not a sanity limit (0 or 1, or strict beside a non-strict one)
is the target; the others still have to hold, as they do for MLCommons' checker.

Run counts come from `benchmark_meta.get_result_file_counts`; runs dropped at each end are
those of `result_summarizer` (4 for unet3d, 1 otherwise: a literal of its scoring code).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.importers.common import ImportFailure
from perfsuite.record.olympic import max_dropped

INSTALL_HINT = (
    "pip install 'perfsuite[mlperf]' (MLCommons' mlperf-logging), or pass --target BENCH=VALUE"
)
USAGES = ("training", "hpc")
_RULESET_DIR = re.compile(r"^(training|hpc)_(\d+)\.(\d+)\.(\d+)$")
# record metric names, for display only (the rule files name no metric); else the log's key
METRIC_NAMES = {
    "resnet": "top1",
    "bert": "mlm_accuracy",
    "ssd": "map",
    "retinanet": "map",
    "maskrcnn": "bbox_map",
    "unet3d": "mean_dice",
    "dlrm": "auc",
    "dlrm_dcnv2": "auc",
    "gnn": "accuracy",
    "rgat": "accuracy",
    "minigo": "win_rate",
    "rnnt": "wer",
    "gpt3": "log_perplexity",
    "llama2_70b_lora": "eval_loss",
    "llama31_8b": "log_perplexity",
    "llama31_405b": "log_perplexity",
    "flux1": "eval_loss",
    "stable_diffusion": "fid",
    "cosmoflow": "mae",
    "deepcam": "iou",
}
# record metric names of dict-valued eval_accuracy components
COMPONENT_METRICS = {"BBOX": "bbox_map", "SEGM": "segm_map", "FID": "fid", "CLIP": "clip"}
# Benchmarks whose rules measure training progress otherwise than in epochs, and what an
# evaluation's `epoch_num` (where logged) counts in their logs: GPT-3 counts tokens (its
# evaluation interval is 24,576 sequences of 2,048 tokens, logged as epoch_num 50,331,648);
# the Llama benchmarks count samples (their rules require `samples_count`; logs that also
# write `epoch_num` write the same count). Such a number is never read as an epoch.
PROGRESS_UNITS = {
    "gpt3": "tokens",
    "llama2_70b_lora": "samples",
    "llama31_8b": "samples",
    "llama31_405b": "samples",
}


class RulesUnavailable(ImportFailure):
    """mlperf-logging is not installed, or has no rules for this round and benchmark."""


@dataclass(frozen=True)
class Condition:
    """`component` of the evaluation (None: the scalar value) must be >= or <= `target`
    (> or < when `strict`)."""

    component: str | None
    target: float
    higher_is_better: bool = True
    strict: bool = False

    def met(self, value: float) -> bool:
        if self.higher_is_better:
            return value > self.target if self.strict else value >= self.target
        return value < self.target if self.strict else value <= self.target

    def op(self) -> str:
        return (">" if self.higher_is_better else "<") + ("" if self.strict else "=")


@dataclass(frozen=True)
class Benchmark:
    """Quality target (all conditions must hold at once), sanity limits that must hold too,
    how many runs a score needs and drops at each end, and which rules these are."""

    name: str
    metric: str  # record metric name of the first condition
    conditions: tuple[Condition, ...]
    required_runs: int
    max_dropped: int = 1
    limits: tuple[Condition, ...] = ()
    rules: str = "user-given target (--target)"
    eval_key: str = "eval_accuracy"
    usage: str = "training"
    ruleset: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def progress_unit(self) -> str | None:
        """What `epoch_num` counts in this benchmark's logs ("tokens", "samples"), None where
        it is an epoch (`PROGRESS_UNITS`)."""
        return PROGRESS_UNITS.get(self.name)

    @property
    def joint(self) -> bool:
        """Judged on named components of the evaluation (Mask R-CNN box+mask, SD FID+CLIP)."""
        return any(c.component is not None for c in self.conditions)

    def describe(self) -> str:
        """The target as text, e.g. "bbox_map >= 0.377 and segm_map >= 0.339"."""
        return " and ".join(
            f"{component_metric(self, c.component)} {c.op()} {c.target:g}" for c in self.conditions
        )


def component_metric(bench: Benchmark, component: str | None) -> str:
    if component is None:
        return bench.metric
    return COMPONENT_METRICS.get(component, component.lower())


def _package_dir() -> Path:
    try:
        import mlperf_logging
    except ImportError:
        raise RulesUnavailable(
            f"MLPerf rules: the mlperf-logging package is not installed; {INSTALL_HINT}"
        ) from None
    return Path(mlperf_logging.__file__).parent


@functools.lru_cache(maxsize=1)
def rulesets() -> tuple[tuple[str, str], ...]:
    """(usage, "X.Y.Z") of every ruleset the installed mlperf-logging ships, oldest first."""
    root = _package_dir() / "compliance_checker"
    found = []
    for d in root.iterdir():
        m = _RULESET_DIR.match(d.name)
        if m and d.is_dir():
            found.append((m.group(1), tuple(int(x) for x in m.groups()[1:])))
    found.sort()
    return tuple((u, ".".join(map(str, v))) for u, v in found)


def run_count(usage: str, name: str) -> int | None:
    """Result files an official submission has for `name` (mlperf-logging benchmark_meta)."""
    _package_dir()
    from mlperf_logging.benchmark_meta import get_result_file_counts

    return get_result_file_counts(usage).get(name)


def newest_ruleset(usage: str, name: str) -> str | None:
    """The newest ruleset of `usage` with a closed-division rule file for `name`."""
    root = _package_dir() / "compliance_checker"
    for u, version in reversed(rulesets()):
        if u == usage and (root / f"{u}_{version}" / f"closed_{name}.yaml").is_file():
            return version
    return None


def benchmarks_of(usage: str, version: str) -> list[str]:
    folder = _package_dir() / "compliance_checker" / f"{usage}_{version}"
    names = sorted(p.stem[len("closed_") :] for p in folder.glob("closed_*.yaml"))
    return [n for n in names if n != "common"]


def _operand(node: ast.expr) -> tuple[str, str | None] | float | None:
    """`v['value']` -> ("v", None); `v['value']['FID']` -> ("v", "FID"); a number -> float."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _operand(node.operand)
        return -inner if isinstance(inner, float) else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
        base = node.value
        if isinstance(base, ast.Name) and base.id == "v" and key == "value":
            return ("v", None)
        inner = _operand(base)
        if isinstance(inner, tuple) and inner[1] is None and isinstance(key, str):
            return ("v", key)
    return None


# comparison -> (higher is better, strict)
_OPS = {
    ast.GtE: (True, False),
    ast.Gt: (True, True),
    ast.LtE: (False, False),
    ast.Lt: (False, True),
}


def _bounds(node: ast.expr, where: str) -> list[Condition]:
    """The bounds of a conjunction of comparisons between the value and numbers."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [b for v in node.values for b in _bounds(v, where)]
    if not isinstance(node, ast.Compare):
        raise RulesUnavailable(f"{where}: not a conjunction of bounds on the value")
    out = []
    terms = [node.left, *node.comparators]
    for left, op, right in zip(terms, node.ops, terms[1:], strict=False):
        a, b = _operand(left), _operand(right)
        kind = _OPS.get(type(op))
        if kind is None:
            raise RulesUnavailable(f"{where}: comparison {type(op).__name__} is not a bound")
        higher, strict = kind
        if isinstance(a, tuple) and isinstance(b, float):  # value >= number
            out.append(Condition(a[1], b, higher, strict))
        elif isinstance(a, float) and isinstance(b, tuple):  # number <= value
            out.append(Condition(b[1], a, not higher, strict))
        else:
            raise RulesUnavailable(f"{where}: a bound that is not value-against-number")
    return out


def _split(bounds: list[Condition]) -> tuple[list[Condition], list[Condition]]:
    """(targets, limits): per component, the bounds that are not sanity limits are targets."""
    targets, limits = [], []
    for comp in dict.fromkeys(b.component for b in bounds):
        mine = [b for b in bounds if b.component == comp]
        cand = [b for b in mine if b.target not in (0.0, 1.0)]
        if len(cand) > 1 and any(not b.strict for b in cand):
            cand = [b for b in cand if not b.strict]
        targets += cand
        limits += [b for b in mine if b not in cand]
    return targets, limits


@functools.lru_cache(maxsize=256)
def official(name: str, usage: str, version: str) -> Benchmark:
    """`name`'s closed-division target in mlperf-logging's `<usage>_<version>` rules."""
    import yaml

    folder = _package_dir() / "compliance_checker" / f"{usage}_{version}"
    path = folder / f"closed_{name}.yaml"
    if not path.is_file():
        have = ", ".join(benchmarks_of(usage, version)) if folder.is_dir() else "none"
        raise RulesUnavailable(
            f"MLPerf {usage} {version} rules (mlperf-logging): no benchmark {name!r} "
            f"(that round has: {have}); pass --round or --target {name}=VALUE"
        )
    rules = yaml.safe_load(path.read_text()) or []
    keys = [r["KEY"] for r in rules if isinstance(r, dict) and isinstance(r.get("KEY"), dict)]
    checks = [k for k in keys if "ATLEAST_ONE_CHECK" in k]
    where = f"{path}: field ATLEAST_ONE_CHECK"
    if len(checks) != 1:
        raise RulesUnavailable(f"{where}: {len(checks)} checks, expected one; pass --target")
    key, text = str(checks[0]["NAME"]), str(checks[0]["ATLEAST_ONE_CHECK"]).strip()
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise RulesUnavailable(f"{where}: not a Python expression; pass --target") from None
    targets, limits = _split(_bounds(tree, f"{where} {text!r}"))
    if not targets:
        raise RulesUnavailable(f"{where}: {text!r} sets no target; pass --target {name}=VALUE")
    notes = []
    if key == "aggregated_eval_accuracy":  # one eval_accuracy line per metric, merged
        key = "eval_accuracy"
        notes.append("components logged one line per metric, merged per samples_count")
    first = targets[0]
    metric = METRIC_NAMES.get(name, key)
    if first.component is not None:
        metric = COMPONENT_METRICS.get(first.component, first.component.lower())
    return Benchmark(
        name=name,
        metric=metric,
        conditions=tuple(targets),
        required_runs=run_count(usage, name) or 0,
        max_dropped=max_dropped(name),
        limits=tuple(limits),
        rules=f"MLPerf {usage.capitalize()} {version} (mlperf-logging {_version()})",
        eval_key=key,
        usage=usage,
        ruleset=version,
        notes=tuple(notes),
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mlperf-logging")
    except Exception:  # a missing distribution record only loses the label
        return "?"


def custom(
    name: str,
    target: float,
    higher_is_better: bool = True,
    metric: str | None = None,
    usage: str = "training",
) -> Benchmark:
    """A benchmark with a user-given scalar target (`--target`, or a perfsuite run's own).

    Run counts come from mlperf-logging when it is installed (the summarizer keys them by
    name), else none; joint benchmarks are refused by the caller.
    """
    try:
        runs = run_count(usage, name) or 0
    except RulesUnavailable:
        runs = 0
    metric = metric or METRIC_NAMES.get(name, "eval_accuracy")
    return Benchmark(
        name, metric, (Condition(None, target, higher_is_better),), runs, max_dropped(name)
    )


def is_hpc(name: str) -> bool:
    """An MLPerf HPC benchmark (mlperf-logging's HPC run counts name it); False without it."""
    try:
        _package_dir()
    except RulesUnavailable:
        return False
    from mlperf_logging.benchmark_meta import get_result_file_counts

    return name in get_result_file_counts("hpc")
