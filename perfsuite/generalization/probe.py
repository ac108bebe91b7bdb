"""`eval probe`: how well a frozen network's penultimate features transfer to another labeled
image set, read by a linear classifier fitted in closed form.

The classifier is ridge regression onto one-hot targets (argmax to predict): features are
standardized with the train split's mean and standard deviation, the bias is the target
mean (not penalized), and W = (X'X/n + lambda I)^-1 X'Y/n in float64. It has no random
initialization, no learning rate and no epochs, so a probe is a deterministic function of
the features, and two runs' probes differ only because their features do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfsuite.generalization.images import load_images, probe_splits
from perfsuite.generalization.section import accuracy, provenance
from perfsuite.generalization.threshold_model import ThresholdModel
from perfsuite.stats import difference_ci, mean_ci

DEFAULT_RIDGE = 1e-2


@dataclass
class LinearProbe:
    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    bias: np.ndarray

    def predict(self, feats: np.ndarray) -> np.ndarray:
        return ((feats - self.mean) / self.scale) @ self.weight + self.bias


def fit_ridge(feats: np.ndarray, labels: np.ndarray, classes: int, ridge: float) -> LinearProbe:
    """Closed-form ridge regression of one-hot labels on standardized features."""
    if ridge < 0:
        raise ValueError(f"--ridge must be >= 0, got {ridge}")
    x = np.asarray(feats, dtype=np.float64)
    n, d = x.shape
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0  # a constant feature carries nothing; keep it at 0
    z = (x - mean) / scale
    y = np.eye(classes)[labels]
    bias = y.mean(axis=0)
    gram = z.T @ z / n + ridge * np.eye(d)
    weight = np.linalg.lstsq(gram, z.T @ (y - bias) / n, rcond=None)[0]
    return LinearProbe(mean, scale, weight, bias)


@dataclass
class ProbeResult:
    entry: dict[str, Any]
    hits: np.ndarray  # per test image, 0/1


def run_probe(
    tm: ThresholdModel, data_dir: str, ridge: float, seed: int, device: str
) -> ProbeResult:
    """Features of train/ and test/ through the frozen threshold model, the probe fitted on
    train/, its accuracy on test/."""
    train_dir, test_dir = probe_splits(Path(data_dir).expanduser())
    train = load_images(train_dir, tm.input_shape)
    test = load_images(test_dir, tm.input_shape, train.classes, exact=True)
    probe = fit_ridge(tm.features(train.images), train.labels, len(train.classes), ridge)
    train_hits = probe.predict(tm.features(train.images)).argmax(1) == train.labels
    hits = (probe.predict(tm.features(test.images)).argmax(1) == test.labels).astype(float)
    entry = provenance("probe", data_dir, seed, device, tm.record)
    entry["test"] = accuracy(hits.mean(), len(hits), mean_ci(hits, seed=seed))
    entry["train_top1"] = float(train_hits.mean())
    entry["n_train"] = len(train.labels)
    entry["classes"] = train.classes
    entry["feature_dim"] = int(probe.weight.shape[0])
    entry["method"] = "ridge regression on one-hot labels, standardized features, closed form"
    entry["ridge"] = float(ridge)
    entry["resized"] = train.resized + test.resized
    return ProbeResult(entry, hits)


def compare(result: ProbeResult, reference: ProbeResult, run_id: str, seed: int) -> None:
    """Add the reference run's probe top-1 and the paired difference (same test images)."""
    ci = difference_ci(result.hits, reference.hits, paired=True, seed=seed)
    result.entry["reference"] = {
        "run_id": run_id,
        "top1": reference.entry["test"]["top1"],
        "difference": result.entry["test"]["top1"] - reference.entry["test"]["top1"],
        "difference_ci95": list(ci) if ci else None,
    }
