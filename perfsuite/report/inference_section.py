"""Report section: batch-1 inference (the rule it follows, the latency statistic it takes,
percentiles, the accuracy those predictions reached) and energy (to accuracy, per 10,000
inferences) with its source or the reason it is absent. Figures come from
perfsuite.analyzers.results.inference and the record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.results.inference import OLDER_RULE, energy_view, inference_view
from perfsuite.analyzers.results.record_view import why_absent
from perfsuite.report import html as h
from perfsuite.task_metrics import value_text


def latency_label(rule: str | None) -> str:
    """The latency row's label, naming the statistic the rule takes
    (perfsuite.analyzers.results.inference)."""
    if rule == "dawnbench":
        return "latency (mean, batch 1)"
    if rule == OLDER_RULE:
        return "latency (median of a few calls, batch 1; older rule)"
    if rule == "imported":
        return "latency (batch 1, as the imported result states it)"
    return f"latency (batch 1, rule {rule})"


def inference_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    v = inference_view(rec)
    if v.rule is None:
        return [["inference", "not measured"]]
    rows = [["rule", str(v.rule)]]
    if v.latency_s is None:  # the accuracy may still be known (a cost-only DAWNBench entry)
        rows.append(["latency", f"none: {v.note}"])
    else:
        rows.append([latency_label(v.rule), fmt.si(v.latency_s, "s")])
    if v.p50_s is not None:
        rows.append(
            [
                "p50 / p90 / p99",
                " / ".join(fmt.si(x, "s") for x in (v.p50_s, v.p90_s, v.p99_s)),
            ]
        )
        rows.append(["examples, mode, precision", f"{v.examples}, {v.mode}, {v.precision}"])
    if v.metrics:
        rows.append(
            [
                "accuracy of these predictions",
                ", ".join(f"{k} {value_text(k, x)}" for k, x in v.metrics.items()),
            ]
        )
    gen = (rec.get("inference") or {}).get("generation")
    if gen:  # language models: batch-1 generation with a KV cache (docs/gpt.md)
        decode = (gen.get("decode_per_token") or {}).get("value")
        rows.append(
            [
                "generation (batch 1, KV cache)",
                f"time to first token {fmt.si(gen['time_to_first_token']['value'], 's')}, "
                f"decode {fmt.si(decode, 's')} per token ({gen['prompts']} prompts of "
                f"{gen['prompt_tokens']} tokens, {gen['new_tokens']} generated)",
            ]
        )
    if v.note and v.latency_s is not None:
        rows.append(["note", v.note])
    source = ((rec.get("inference") or {}).get("latency") or {}).get("source")
    if source:
        rows.append(["source", source])
    return rows


def energy_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    e, v = energy_view(rec), inference_view(rec)
    rows = []
    if e.to_accuracy_j is not None or e.note:
        to_acc = fmt.si(e.to_accuracy_j, "J") if e.to_accuracy_j is not None else "-"
        rows.append(["energy to accuracy", to_acc + (f" ({e.note})" if e.note else "")])
    if e.source:
        rows.append(["training energy source (measured)", e.source])
    if v.energy_per_10k_j is not None:
        rows.append(["energy per 10,000 inferences", fmt.si(v.energy_per_10k_j, "J")])
    elif v.energy_note:
        rows.append(["energy per 10,000 inferences", f"- ({v.energy_note})"])
    return rows or [["energy", why_absent(rec, "energy")]]


def inference_section(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for rec in records:
        parts.append(f"<h3>{h.esc(rec.get('run_id'))}</h3>")
        parts.append(h.table(["inference", "value"], inference_rows(rec)))
        parts.append(h.table(["energy", "value"], energy_rows(rec)))
    return "".join(parts)
