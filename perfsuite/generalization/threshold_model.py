"""The threshold model of a run, rebuilt from its record: the workload and recipe the run
used, the weights from its threshold checkpoint, and the model's view of images (logits
through the workload's own `predict`, penultimate features through `features`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfsuite.record import RecordError
from perfsuite.runner.frameworks.tf_parts import rebuild_threshold_model
from perfsuite.runner.record.checkpoint import load_threshold_model
from perfsuite.workloads import get_workload
from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.switches import parse_switches, resolve_preset

BATCH = 1024  # the runner's evaluation batch size, so the own test set is computed alike


@dataclass
class OwnTest:
    """The run's own test set through the threshold model: logits of the inputs exactly as
    evaluated during the run, and the same images as uint8 (for corruptions)."""

    logits: np.ndarray
    labels: np.ndarray
    images: np.ndarray


@dataclass
class ThresholdModel:
    record: dict[str, Any]
    workload: Workload
    recipe: Recipe
    model: Any
    device: str
    framework: str = "pytorch"
    switches: Any = None  # the parsed switches the run ran with (precision, layout, ...)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.workload.input_shape)

    def _batches(self, images: np.ndarray) -> Any:
        import torch

        for start in range(0, len(images), BATCH):
            chunk = torch.from_numpy(images[start : start + BATCH]).to(self.device)
            yield self.workload.from_images(chunk.permute(0, 3, 1, 2).float() / 255.0)

    def logits(self, images: np.ndarray) -> np.ndarray:
        """Logits (N, K) of uint8 images (N, H, W, C), via the workload's `predict`."""
        import torch

        out = []
        with torch.no_grad():
            for x in self._batches(images):
                out.append(self.workload.predict(self.model, x).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.workload.num_classes))

    def features(self, images: np.ndarray) -> np.ndarray:
        """Penultimate features (N, D) of uint8 images, via the workload's `features`."""
        import torch

        out = []
        with torch.no_grad():
            for x in self._batches(images):
                out.append(self.workload.features(self.model, x).float().cpu().numpy())
        return np.concatenate(out).astype(np.float64)

    def own_test(self, data_dir: str | None) -> OwnTest:
        """Evaluate the run's own test set (loaded as the run loaded it)."""
        import torch

        data = self.workload.load_data(data_dir, self.device)
        logits, labels, images = [], [], []
        try:
            with torch.no_grad():
                for b in data.eval_batches(BATCH):
                    logits.append(self.workload.predict(self.model, *b.inputs).float().cpu())
                    labels.append(b.target.cpu())
                    img = self.workload.to_images(b.inputs[0]).clamp(0, 1)
                    images.append((img * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu())
        finally:
            data.close()
        return OwnTest(
            torch.cat(logits).numpy(), torch.cat(labels).numpy(), torch.cat(images).numpy()
        )


def rebuild(
    record: dict[str, Any],
    device: str = "cpu",
    before_model: Callable[[Workload, Any], None] | None = None,
) -> ThresholdModel:
    """Workload, recipe, switches and threshold weights of a loaded record (a PyTorch or
    TensorFlow run, by its `config.framework`; the TensorFlow model: runner/frameworks/tf_parts.py).
    The model is rebuilt as the run built it: PyTorch with its `channels_last` memory format,
    TensorFlow with its layout and compute dtype. `before_model(workload, switches)` runs
    between configuring the workload and building the model, where the run loaded its data:
    a workload whose model depends on the data (squad's vocabulary) needs it there."""
    origin = record.get("_path", "<record>")
    config = record.get("config") or {}
    if str(config.get("source") or "").startswith("perfsuite.track"):
        raise RecordError(
            f"{origin}: field config.source: a perfsuite.track run (your own training loop): "
            "perfsuite cannot rebuild its model and data, so `infer` and `eval` take "
            "`perfsuite run` records only"
        )
    name = config.get("workload") or (record.get("task") or {}).get("workload")
    if not name:
        raise RecordError(f"{origin}: field config.workload: missing (not a perfsuite run?)")
    values = dict(config.get("recipe_values") or {})
    if not values:
        raise RecordError(f"{origin}: field config.recipe_values: missing")
    framework = str(config.get("framework") or "pytorch")
    state = load_threshold_model(record) if framework == "pytorch" else None
    try:
        workload = get_workload(name, framework)
    except (KeyError, ValueError) as exc:
        raise RecordError(f"{origin}: field config.workload: {exc.args[0]}") from None
    try:
        switches = parse_switches(list(config.get("switches") or []), workload.switches, name)
    except ValueError as exc:
        raise RecordError(f"{origin}: field config.switches: {exc}") from None
    extra = values.pop("extra", {})
    try:
        recipe = Recipe(**values, extra=dict(extra))
    except TypeError as exc:
        raise RecordError(f"{origin}: field config.recipe_values: {exc}") from None
    resolve_preset(switches, recipe.extra, str(config.get("device") or "cpu"))  # as the run did
    workload.configure(recipe)
    if before_model is not None:
        before_model(workload, switches)
    if framework == "tensorflow":
        model, switches = rebuild_threshold_model(record, workload, recipe, device)
        return ThresholdModel(record, workload, recipe, model, device, framework, switches)
    model = workload.build_model(recipe)
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise RecordError(
            f"{origin}: field checkpoint.file: does not fit the model: {first}"
        ) from None
    if switches.channels_last:  # as runner/assemble.build_state trained (and measured) it
        import torch

        model = model.to(memory_format=torch.channels_last)
    model.to(device).eval()
    return ThresholdModel(record, workload, recipe, model, device, framework, switches)


def correct(logits: np.ndarray, labels: np.ndarray, k: int = 1) -> np.ndarray:
    """Per-example 0/1: is the label among the top-k logits."""
    if k == 1:
        return (logits.argmax(1) == labels).astype(float)
    top = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return (top == labels[:, None]).any(axis=1).astype(float)
