"""`eval shift`: the threshold model on another test set with the same classes, and on the
common corruptions of its own test set. Accuracies come with percentile-bootstrap intervals
over test images (perfsuite.stats.mean_ci)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfsuite.generalization import corruptions
from perfsuite.generalization.images import eval_split, load_images
from perfsuite.generalization.section import accuracy, provenance
from perfsuite.generalization.threshold_model import OwnTest, ThresholdModel, correct
from perfsuite.stats import difference_ci, mean_ci


def _top5(tm: ThresholdModel) -> bool:
    """Top-5 applies when there are more than five classes."""
    return tm.workload.num_classes > 5


def own_accuracy(tm: ThresholdModel, own: OwnTest, seed: int) -> tuple[dict, np.ndarray]:
    """The run's own test accuracy re-measured with the threshold model (and the per-image
    correctness, for the drop's interval)."""
    hits = correct(own.logits, own.labels)
    top5 = correct(own.logits, own.labels, 5).mean() if _top5(tm) else None
    out = accuracy(hits.mean(), len(hits), mean_ci(hits, seed=seed), top5)
    out["recorded"] = (tm.record.get("checkpoint") or {}).get("value")
    return out, hits


def evaluate_shift(
    tm: ThresholdModel, own: OwnTest, data_dir: str, seed: int, device: str
) -> dict[str, Any]:
    """Accuracy on `data_dir` (class folders, or its test/ or val/ split) and the drop from
    the own test set; the drop's interval resamples both sets independently."""
    split = eval_split(Path(data_dir).expanduser())
    shifted = load_images(split, tm.input_shape, tm.workload.classes(), exact=True)
    logits = tm.logits(shifted.images)
    hits = correct(logits, shifted.labels)
    top5 = correct(logits, shifted.labels, 5).mean() if _top5(tm) else None
    own_acc, own_hits = own_accuracy(tm, own, seed)
    entry = provenance("shift", str(split), seed, device, tm.record)
    entry["shifted"] = accuracy(hits.mean(), len(hits), mean_ci(hits, seed=seed), top5)
    entry["shifted"]["resized"] = shifted.resized
    entry["own_test"] = own_acc
    ci = difference_ci(own_hits, hits, paired=False, seed=seed)
    entry["drop"] = {
        "top1": own_acc["top1"] - entry["shifted"]["top1"],
        "top1_ci95": list(ci) if ci else None,
        "top5": None if top5 is None else own_acc["top5"] - top5,
    }
    return entry


def evaluate_corruptions(
    tm: ThresholdModel,
    own: OwnTest,
    seed: int,
    device: str,
    data_dir: str | None = None,
    families: Sequence[str] | None = None,
    severities: Sequence[int] = (1, 2, 3, 4, 5),
    limit: int | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Top-1 on every (family, severity) of the own test set (its first `limit` images),
    the mean per family over severities, and the mean over families with an interval over
    images. `clean` is the same images through the same uint8 round trip, uncorrupted."""
    images, labels = own.images, own.labels
    if limit is not None:
        if limit < 2:
            raise ValueError(f"--limit: need at least 2 images, got {limit}")
        images, labels = images[:limit], labels[:limit]
    indices = np.arange(len(labels))
    names = list(families) if families else list(corruptions.FAMILIES)
    unknown = [f for f in names if f not in corruptions.FAMILIES]
    if unknown:
        known = ", ".join(corruptions.FAMILIES)
        raise ValueError(f"unknown corruption(s) {', '.join(unknown)}; known: {known}")
    clean = correct(tm.logits(images), labels)
    per_family: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}
    per_image = np.zeros(len(labels))
    cells = 0
    for fam in names:
        why = corruptions.applicable(fam, images.shape[-1])
        if why:
            skipped[fam] = why
            continue
        accs = []
        for sev in severities:
            hits = correct(tm.logits(corruptions.corrupt(images, fam, sev, seed, indices)), labels)
            accs.append(float(hits.mean()))
            per_image += hits
            cells += 1
            if progress is not None:
                progress(f"{fam} severity {sev}: top1 {accs[-1]:.4f}")
        per_family[fam] = accs
    if not cells:
        raise ValueError("no corruption applies to these images: " + "; ".join(skipped.values()))
    means = family_means(per_family)
    per_image /= cells
    entry = provenance("shift --corruptions", data_dir, seed, device, tm.record)
    entry["severities"] = [int(s) for s in severities]
    entry["families"] = {f: {"accuracy": per_family[f], "mean": means[f]} for f in per_family}
    entry["mean"] = float(np.mean(list(means.values())))
    ci = mean_ci(per_image, seed=seed)
    entry["mean_ci95"] = list(ci) if ci else None
    entry["clean"] = accuracy(clean.mean(), len(clean), mean_ci(clean, seed=seed))
    entry["skipped"] = skipped
    entry["limit"] = limit
    return entry


def family_means(accuracy: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Mean accuracy over the severities of each corruption family."""
    return {name: float(np.mean(accs)) for name, accs in accuracy.items() if len(accs)}
