"""MLPerf Training quality targets and required run counts, as data.

Version followed: MLPerf Training v4.0 closed-division quality targets for the benchmarks in
that round; benchmarks retired before v4.0 keep the target of the last round that had them
(v1.0 to v3.1). Numbers cross-checked against the `mlperf-logging` package's compliance rules
(training_4.0.0 / training_1.0.0 `closed_*.yaml`). `ssd` changed meaning in v2.0
(SSD-ResNet34, mAP 0.23 -> RetinaNet, mAP 0.34): pass `--target` for older logs.

Run counts per benchmark are those MLPerf requires for a score (mlperf-logging
`benchmark_meta`; its package checker wants exactly that many `result_*.txt`). The score drops
`max_dropped` runs at each end of the sorted minutes, as mlperf-logging's result summarizer
does: 4 for unet3d (40 runs, up to 4 may fail to converge), 1 for every other benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass

RULES_VERSION = "MLPerf Training v4.0 (retired benchmarks: last round that had them)"


@dataclass(frozen=True)
class Condition:
    """`component` of eval_accuracy (None: the scalar value) must be >= or <= `target`."""

    component: str | None
    target: float
    higher_is_better: bool = True

    def met(self, value: float) -> bool:
        return value >= self.target if self.higher_is_better else value <= self.target


@dataclass(frozen=True)
class Benchmark:
    """Quality target (all conditions must hold at once), how many runs a score needs, and
    how many runs the score drops at each end (also the most that may fail to converge)."""

    name: str
    metric: str  # record metric name of the first condition
    conditions: tuple[Condition, ...]
    required_runs: int
    max_dropped: int = 1

    @property
    def joint(self) -> bool:
        """Judged on named components of eval_accuracy (Mask R-CNN box+mask, SD FID+CLIP)."""
        return any(c.component is not None for c in self.conditions)

    def describe(self) -> str:
        """The target as text, e.g. "bbox_map >= 0.377 and segm_map >= 0.339"."""
        return " and ".join(
            f"{component_metric(self, c.component)} {'>=' if c.higher_is_better else '<='} "
            f"{c.target:g}"
            for c in self.conditions
        )


def _one(
    name: str, metric: str, target: float, runs: int, higher: bool = True, dropped: int = 1
) -> Benchmark:
    return Benchmark(name, metric, (Condition(None, target, higher),), runs, dropped)


BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        _one("resnet", "top1", 0.759, 5),
        _one("bert", "mlm_accuracy", 0.720, 10),
        _one("ssd", "map", 0.340, 5),
        _one("retinanet", "map", 0.340, 5),
        _one("unet3d", "mean_dice", 0.908, 40, dropped=4),  # result_summarizer: 4, else 1
        _one("dlrm_dcnv2", "auc", 0.80275, 10),
        _one("dlrm", "auc", 0.8025, 5),
        _one("gnn", "accuracy", 0.72, 10),
        _one("rgat", "accuracy", 0.72, 10),
        _one("minigo", "win_rate", 0.50, 10),
        _one("rnnt", "wer", 0.058, 10, higher=False),
        _one("gpt3", "log_perplexity", 2.69, 3, higher=False),
        _one("llama2_70b_lora", "eval_loss", 0.925, 10, higher=False),
        Benchmark(
            "maskrcnn",
            "bbox_map",
            (Condition("BBOX", 0.377), Condition("SEGM", 0.339)),
            5,
        ),
        Benchmark(
            "stable_diffusion",
            "fid",
            (Condition("FID", 90.0, higher_is_better=False), Condition("CLIP", 0.15)),
            10,
        ),
    )
}

# record metric names of dict-valued eval_accuracy components
COMPONENT_METRICS = {"BBOX": "bbox_map", "SEGM": "segm_map", "FID": "fid", "CLIP": "clip"}


def component_metric(bench: Benchmark, component: str | None) -> str:
    if component is None:
        return bench.metric
    return COMPONENT_METRICS.get(component, component.lower())


def custom(
    name: str, target: float, higher_is_better: bool = True, metric: str | None = None
) -> Benchmark:
    """A benchmark with a user-given scalar target (`--target`, or a perfsuite run's own).

    Joint benchmarks are refused by the caller: one scalar cannot stand for their conditions.
    Run counts and drops stay those of the known benchmark (the summarizer keys them by name).
    """
    known = BENCHMARKS.get(name)
    if metric is None:
        metric = known.metric if known and not known.joint else "eval_accuracy"
    runs, dropped = (known.required_runs, known.max_dropped) if known else (0, 1)
    return Benchmark(name, metric, (Condition(None, target, higher_is_better),), runs, dropped)
