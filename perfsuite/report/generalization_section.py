"""Report section: does the threshold model generalize? One row per run: own test top-1 of
the threshold model, shifted test sets, mean corruption accuracy, linear probes (from the
record's `generalization` section, written by `perfsuite eval`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.report import html as h


def _pct(v: float | None) -> str:
    return fmt.pct(v, 2) if v is not None else "-"


def _ci(a: Mapping[str, Any]) -> str:
    ci = a.get("top1_ci95")
    return f"{_pct(a['top1'])} [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else _pct(a["top1"])


def generalization_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    """One row per result: what was evaluated, on what data, the numbers."""
    gen = rec.get("generalization") or {}
    run, rows = str(rec.get("run_id")), []
    ck = rec.get("checkpoint") or {}
    if ck:
        rows.append(
            [
                run,
                "own test at the threshold (recorded)",
                f"epoch {ck.get('epoch')}",
                _pct(ck.get("value")),
                "as the run recorded it: no interval",
            ]
        )
    for s in gen.get("shift") or []:
        drop = s["drop"]
        ci = drop.get("top1_ci95")
        note = f"drop {100 * drop['top1']:+.2f} pts" + (
            f" [{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]" if ci else ""
        )
        rows.append([run, "own test (re-measured)", "", _ci(s["own_test"]), ""])
        rows.append([run, "shifted test set", str(s["data_dir"]), _ci(s["shifted"]), note])
    c = gen.get("corruptions")
    if c:
        fams = ", ".join(f"{f} {_pct(v['mean'])}" for f, v in c["families"].items())
        limit = f", first {c['limit']} images" if c.get("limit") else ""
        rows.append(
            [
                run,
                "corruptions: clean (same images)",
                f"seed {c['seed']}{limit}",
                _ci(c["clean"]),
                "",
            ]
        )
        rows.append(
            [
                run,
                f"corruptions: mean over {len(c['families'])} families x "
                f"{len(c['severities'])} severities",
                "",
                _pct(c["mean"]),
                fams,
            ]
        )
    for p in gen.get("probe") or []:
        ref = p.get("reference")
        note = (
            f"reference {ref['run_id']}: {_pct(ref['top1'])}, difference "
            f"{100 * ref['difference']:+.2f} pts"
            if ref
            else ""
        )
        rows.append(
            [
                run,
                f"linear probe ({len(p['classes'])} classes)",
                str(p["data_dir"]),
                _ci(p["test"]),
                note,
            ]
        )
    return rows


def generalization_section(records: Sequence[Mapping[str, Any]]) -> str:
    rows = [r for rec in records for r in generalization_rows(rec)]
    if not any(rec.get("generalization") for rec in records):
        return h.notes(["no generalization results: run `perfsuite eval shift|probe RUN`"]) + (
            h.table(["run", "what", "data", "top1 [95% CI]", "note"], rows) if rows else ""
        )
    return h.table(["run", "what", "data", "top1 [95% CI]", "note"], rows)
