"""One run record as DataFrames: its curve, per-op roofline, kernels, telemetry and config.

Why a class of lazy members: opening a record must stay cheap (a notebook opens dozens), so
each analysis (roofline, utilization, the trace sidecar) runs the first time a member needs it
and is kept. Every number comes from the record, `perfsuite.analyzers.roofline.roofline`,
`perfsuite.analyzers.roofline.utilization`, `perfsuite.analyzers.results.cost` or the trace
analyzer: the same calls
the CLI's `roofline`, `cost` and `timeline` commands make. Columns and units: docs/api.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from perfsuite.analyzers.results.cost import costs
from perfsuite.analyzers.results.record_view import framework
from perfsuite.analyzers.roofline.above_roof import roof_name
from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.ops import ranked_ops
from perfsuite.analyzers.roofline.results import RunRoofline
from perfsuite.analyzers.roofline.roofline import EXPLAIN, Roofline, roofline
from perfsuite.analyzers.roofline.utilization import Utilization, utilization
from perfsuite.api.figures import RunFigures
from perfsuite.api.frames import TEXT_COLUMNS, Spec, flatten, frame, records_frame, series
from perfsuite.devices.roofs import peaks_file_roofs
from perfsuite.flops.mfu import mfu
from perfsuite.pricing import load_prices
from perfsuite.record import load_record, qvalue
from perfsuite.record.sidecars import (
    TELEMETRY_COLUMNS,
    read_telemetry,
    telemetry_path,
    trace_path,
)
from perfsuite.views.roofline_rows import utilization_doubted

if TYPE_CHECKING:
    from perfsuite.api.trace import Trace

# One row per op of the profiled window joined with its FLOP/byte model; per training step.
OPS: Spec = [
    ("op", "op"),
    ("status", "status"),
    ("calls", "calls"),
    ("time_s", "time_s"),
    ("time_kind", "time_kind"),
    ("own_time_s", "own_time_s"),
    ("wrapper", "wrapper"),
    ("share", "time_share"),
    ("flops", "placement.flops"),
    ("bytes", "placement.bytes"),
    ("intensity_flop_per_byte", "placement.intensity"),
    ("achieved_flop_per_s", "placement.achieved_flops"),
    ("achieved_byte_per_s", "placement.achieved_bandwidth"),
    ("bound", "placement.bound"),
    ("math", "placement.math"),
    ("math_evidence", "placement.math_evidence"),
    ("peak_flop_per_s", "placement.peak"),
    ("roof_flop_per_s", "placement.attainable"),
    ("frac_of_roof", "placement.frac_of_roof"),
    ("frac_of_peak", "placement.frac_of_peak"),
    ("over_roof", "placement.over_roof"),
    ("flag", "placement.flag"),
    ("lost_time_s", "lost_time_s"),
    ("lost_time_why", "lost_time_why"),
]
STEP: Spec = [
    ("op", "name"),
    ("time_s", "time_s"),
    ("share", "share"),
    ("provenance", "provenance"),
    ("profiled_s", "profiled_s"),
]
RATES: Spec = [
    ("scope", "scope"),
    ("achieved_flop_per_s", "achieved_flops"),
    ("achieved_byte_per_s", "achieved_bandwidth"),
    ("of_measured_peak", "of_measured_peak"),
    ("of_spec_peak", "of_spec_peak"),
    ("of_measured_bandwidth", "of_measured_bandwidth"),
    ("of_spec_bandwidth", "of_spec_bandwidth"),
]
LEVELS: Spec = [
    ("name", "name"),
    ("level", "level"),
    ("bytes_provenance", "bytes_provenance"),
    ("ceiling_byte_per_s", "ceiling_bandwidth"),
    *(col for col in OPS if str(col[1]).startswith("placement.")),
    ("time_s", "placement.time_s"),
]
COST: Spec = [
    ("run_id", "run_id"),
    ("task", "task"),
    ("entry_type", "entry_type"),
    ("instance_type", "instance_type"),
    ("usd_per_hour", "price.usd_per_hour"),
    ("price_origin", "price.origin"),
    ("price_provenance", "price.provenance"),
    ("price_source", "price.source"),
    ("reached", "reached"),
    ("training_time_s", "training_time_s"),
    ("training_cost_usd", "training_cost_usd"),
    ("training_cost_provenance", "training_cost_provenance"),
    ("inference_latency_s", "inference_latency_s"),
    ("inference_cost_per_10k_usd", "inference_cost_per_10k_usd"),
    ("inference_cost_provenance", "inference_cost_provenance"),
    ("inference_rule", "inference_rule"),
    ("inference_p50_s", "inference_p50_s"),
    ("inference_p90_s", "inference_p90_s"),
    ("inference_p99_s", "inference_p99_s"),
    ("energy_to_accuracy_j", "energy_to_accuracy_j"),
    ("energy_per_10k_j", "energy_per_10k_j"),
    ("energy_source", "energy_source"),
    ("notes", lambda c: "; ".join(c.notes)),
]
NAN = float("nan")
EPOCH_COLUMNS = ("epoch", "train_time_s", "epoch_time_s", "train_loss", "eval_time_s", "samples")
# Rows the CLI's whole-run block has beyond EXPLAIN, with what they mean.
RUN_EXTRA = {
    "over_roof": "roof_time / step_time when above 1: the run is flagged, not a fraction",
    "flag": "why the whole run sits above its roofs (a model or ceiling error), else empty",
}


def doubt_text(run: RunRoofline, key: str) -> str | None:
    """Why a whole-run fraction is in doubt: 'memory roof: aten::add, aten::relu' (the roofs it
    uses that ops are flagged above, and those ops), '; ' between roofs; None when clean."""
    roofs = run.doubts.get(key)
    if not roofs:
        return None
    return "; ".join(
        f"{roof_name(roof).removeprefix('the ')}: " + ", ".join(run.doubted_roofs.get(roof, []))
        for roof in roofs
    )


def cost_frame(
    records: list[Mapping[str, Any]], prices: str | None, instance: str | None
) -> pd.DataFrame:
    """`perfsuite cost --json` as a DataFrame, one row per record (same price rules)."""
    table = load_prices(prices)
    if instance and instance not in table:
        known = ", ".join(sorted(table))
        raise ValueError(f"instance_type {instance}: not in the price table ({known})")
    return frame(costs(records, table, instance), COST)


class Run:
    """A run record (ours or imported) and what the analyzers make of it."""

    def __init__(self, record: dict[str, Any], peaks: Mapping[str, Any] | None = None):
        self.record = record
        self._peaks = peaks

    @classmethod
    def load(cls, path: str | Path, peaks: str | Path | None = None) -> Run:
        """Load and validate a run.json (or its folder); `peaks`: a `perfsuite peaks --json`
        file whose roofs are used before the record's own (as `roofline --peaks`)."""
        roofs = None
        if peaks is not None:
            roofs = peaks_file_roofs(peaks)
        return cls(load_record(path), roofs)

    def __repr__(self) -> str:
        return f"<perfsuite.Run {self.run_id} ({self.record.get('status')})>"

    @property
    def run_id(self) -> str:
        return str(self.record.get("run_id"))

    @property
    def path(self) -> Path | None:
        """The run.json this run was loaded from (None for records built in memory)."""
        p = self.record.get("_path")
        return Path(p) if p else None

    @property
    def flags(self) -> list[str]:
        """The record's own warnings (suspicious imports, missing measurements)."""
        return list(self.record.get("flags") or [])

    # ------------------------------------------------------------------ analyses, kept
    @cached_property
    def _roofline(self) -> Roofline | RooflineInputError:
        try:
            return roofline(self.record, self._peaks)
        except RooflineInputError as exc:  # imported records have no counted FLOPs
            return exc

    def _need_roofline(self) -> Roofline:
        res = self._roofline
        if isinstance(res, RooflineInputError):
            raise res
        return res

    @cached_property
    def _utilization(self) -> Utilization:
        return utilization(self.record, self._peaks)

    # ------------------------------------------------------------------ record tables
    @cached_property
    def epochs(self) -> pd.DataFrame:
        """One row per evaluation: the curve, plus one column per metric (fractions)."""
        evals = self.record.get("evaluations") or []
        per_epoch = (self.record.get("throughput") or {}).get("epoch_times_s") or []
        metrics = sorted({m for ev in evals for m in (ev.get("metrics") or {})})
        rows = []
        for ev in evals:
            e = ev.get("epoch")
            row = {k: ev.get(k) for k in EPOCH_COLUMNS if k != "epoch_time_s"}
            whole = isinstance(e, int) and 1 <= e <= len(per_epoch)
            row["epoch_time_s"] = per_epoch[e - 1] if whole else None
            row.update(ev.get("metrics") or {})
            rows.append(row)
        return records_frame(rows, [*EPOCH_COLUMNS, *metrics])

    @cached_property
    def config(self) -> pd.DataFrame:
        """The run configuration, one row per (dotted) key: CLI options and recipe values."""
        flat = flatten(self.record.get("config") or {})
        df = pd.DataFrame(
            {"key": list(flat), "value": pd.Series(list(flat.values()), dtype=object)}
        )
        return df.set_index("key")

    @cached_property
    def telemetry(self) -> pd.DataFrame:
        """The telemetry CSV sidecar as sampled (empty with the documented columns if absent)."""
        path = telemetry_path(self.record)
        if path is None:
            return records_frame([], TELEMETRY_COLUMNS)
        return pd.DataFrame(read_telemetry(path)).astype("float64")

    # ------------------------------------------------------------------ roofline
    @cached_property
    def ops(self) -> pd.DataFrame:
        """Per-op roofline rows, per training step, in the order of the CLI's per-op table
        (`--top 0`): ops by time, an unmodeled one by its own time, then the wrapper rows."""
        ranked, wrappers = ranked_ops(self._need_roofline().ops)
        return frame(ranked + wrappers, OPS)

    @cached_property
    def ranking(self) -> pd.DataFrame:
        """Joined ops by time lost below their roof, largest first (`roofline`'s ranking)."""
        df = frame(self._need_roofline().ranking, OPS)
        df.index = pd.RangeIndex(1, len(df) + 1, name="rank")
        return df

    @cached_property
    def step_breakdown(self) -> pd.DataFrame:
        """Where the measured step goes: per-op times that add up to it, then the other row."""
        tr = self._need_roofline().time_rows
        return frame(tr.rows if tr else [], STEP)

    @cached_property
    def roofs(self) -> pd.DataFrame:
        """The roofs the run was judged against, with the counted FLOPs each carried."""
        r = self._need_roofline().run
        rows = [
            {
                "roof": math,
                "value": lab.value,
                "unit": lab.unit,
                "provenance": lab.provenance,
                "source": lab.source,
                "flops": r.flops_by_math.get(math),
            }
            for math, lab in r.roofs_used.items()
        ]
        return records_frame(rows, ["roof", "value", "unit", "provenance", "source", "flops"])

    @cached_property
    def hierarchical(self) -> pd.DataFrame:
        """Hierarchical roofline points: kernels or ops against each memory level."""
        return frame(self._need_roofline().hierarchical.points, LEVELS)

    def roofline(self) -> pd.DataFrame:
        """The whole-run block of `perfsuite roofline`: one row per field with its unit,
        provenance, source, meaning and doubt (the value column mixes numbers and `bound`)."""
        r = self._need_roofline().run
        rows = []
        for key, meaning in {**EXPLAIN, **RUN_EXTRA}.items():
            v = getattr(r, key)
            if hasattr(v, "provenance"):
                value = NAN if v.value is None else v.value
                rows.append([key, value, v.unit, v.provenance, v.source, meaning])
            else:
                unit = "fraction" if key.startswith(("frac", "over")) else ""
                value = NAN if v is None and key not in TEXT_COLUMNS else v  # bound, flag
                rows.append([key, value, unit, "derived", "", meaning])
        df = pd.DataFrame(
            rows, columns=["field", "value", "unit", "provenance", "source", "meaning"]
        )
        # a text column: None where the field is clean (a list of lists would make it NaN)
        df["doubt"] = pd.Series([doubt_text(r, f) for f in df["field"]], dtype=object)
        return df.set_index("field")

    def utilization(self) -> pd.DataFrame:
        """Achieved rates of the run and of each joined op over measured and spec ceilings;
        `peak_doubt`, `bandwidth_doubt`: the run's rate is judged against a roof an op is
        flagged above (an upper bound, as the CLI's DOUBT mark says)."""
        u = self._utilization
        res = self._roofline
        peak, bw = (False, False)
        if not isinstance(res, RooflineInputError):
            peak, bw = utilization_doubted(res.run)
        spec: Spec = [
            *RATES,
            ("peak_doubt", lambda row: peak and row is u.run),
            ("bandwidth_doubt", lambda row: bw and row is u.run),
        ]
        return frame(([u.run] if u.run else []) + list(u.ops), spec)

    def cost(self, prices: str | None = None, instance_type: str | None = None) -> pd.DataFrame:
        """Training and inference cost (one row), with the price's origin (`perfsuite cost`)."""
        return cost_frame([self.record], prices, instance_type)

    @property
    def notes(self) -> list[str]:
        """What the roofline and utilization analyses warn about (as the CLI prints them)."""
        res = self._roofline
        if isinstance(res, RooflineInputError):
            return [str(res), *self._utilization.notes]
        return [*res.notes, *res.hierarchical.notes, *self._utilization.notes]

    # ------------------------------------------------------------------ summary
    @cached_property
    def summary(self) -> pd.Series:
        """The run in one column: task, outcome, step, roofline and utilization headlines."""
        rec = self.record
        task, tta = rec.get("task") or {}, rec.get("time_to_accuracy") or {}
        thr, ceil = rec.get("throughput") or {}, rec.get("ceilings") or {}
        work, group = rec.get("work") or {}, rec.get("group") or {}
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "status": rec.get("status"),
            "task": task.get("name"),
            "metric": tta.get("metric", task.get("metric")),
            "threshold": tta.get("threshold", task.get("threshold")),
            "reached": bool(tta.get("reached")),
            "time_to_accuracy_s": tta.get("time_s") if tta.get("reached") else None,
            "epochs_to_threshold": tta.get("epoch") if tta.get("reached") else None,
            "evaluations": len(rec.get("evaluations") or []),
            "model": rec.get("model"),
            "framework": framework(rec),  # "unknown" where the record names none
            "hardware": (rec.get("hardware") or {}).get("name"),
            "device": ceil.get("device"),
            "dtype": ceil.get("dtype") or work.get("dtype"),
            "batch_size": work.get("batch_size"),
            "step_time_s": qvalue(thr.get("step_time")),
            "samples_per_s": qvalue(thr.get("samples_per_s")),
            "inference_latency_s": qvalue((rec.get("inference") or {}).get("latency")),
            "group_id": group.get("id"),
            "seed": (rec.get("config") or {}).get("seed"),
        }
        res = self._roofline
        r = None if isinstance(res, RooflineInputError) else res.run
        out.update(
            {
                "flops_per_step": r.flops_per_step.value if r else None,
                "bytes_per_step": r.bytes_per_step.value if r else None,
                "achieved_flop_per_s": r.achieved_flops.value if r else None,
                "intensity_flop_per_byte": r.intensity.value if r else None,
                "bound": r.bound if r else None,
                "frac_of_roof": r.frac_of_roof if r else None,
                "frac_of_peak": r.frac_of_peak if r else None,
                # an op flagged above a roof the fraction uses: an upper bound (DOUBT)
                "frac_of_roof_doubt": "frac_of_roof" in r.doubts if r else None,
                "frac_of_peak_doubt": "frac_of_peak" in r.doubts if r else None,
                "roof_flag": r.flag if r else None,
            }
        )
        u = self._utilization
        clock, cpu = u.clock, u.cpu
        out.update(
            {
                "measured_peak_flop_per_s": u.measured_peak,
                "spec_peak_flop_per_s": u.spec_peak,
                "measured_bandwidth_byte_per_s": u.measured_bandwidth,
                "spec_bandwidth_byte_per_s": u.spec_bandwidth,
                "sm_clock_hz_mean": clock.sm_clock_hz_mean if clock else None,
                "sm_clock_mean_of_max": clock.mean_of_max if clock else None,
                "throttled": clock.throttled if clock else None,
                "cpu_util_pct_mean": cpu.util_pct_mean if cpu else None,
                "process_cpu_util_pct_mean": cpu.process_util_pct_mean if cpu else None,
                "gpu_util_pct_mean": u.gpu_util_pct_mean,
                "gpu_power_w_mean": u.gpu_power_w_mean,
            }
        )
        m = mfu(rec)  # transformer runs (a model_flops section); None elsewhere
        out.update(
            {
                "model_flops_per_token": m.model_flops_per_token if m else None,
                "tokens_per_s": m.tokens_per_s if m else None,
                "mfu": m.mfu if m else None,
                "mfu_peak_math": m.peak_math if m else None,
                "mfu_peak_flop_per_s": m.peak_flops if m else None,
                "mfu_peak_source": m.peak_source if m else None,
                "measured_peak_utilization": m.measured_peak_utilization if m else None,
                "counted_flops_per_token": m.counted_flops_per_token if m else None,
                "hfu": m.hfu if m else None,
                "path": str(self.path) if self.path else None,
            }
        )
        return series(out, self.run_id)

    # ------------------------------------------------------------------ sidecars, figures
    @cached_property
    def _trace(self) -> Trace:
        from perfsuite.api.trace import Trace

        return Trace(trace_path(self.record))

    def trace(self) -> Trace:
        """The run's profiler-trace sidecar as a Trace (what `perfsuite timeline RUN` reads)."""
        return self._trace

    @property
    def kernels(self) -> pd.DataFrame:
        """Device kernels of the run's profiled window (empty for CPU runs: no kernels)."""
        return self._trace.kernels

    @cached_property
    def figures(self) -> RunFigures:
        """Plotly figures of this run, drawn by the report's own figure code."""
        return RunFigures(self.record, self._need_roofline, lambda: self._utilization)
