"""The runner's framework hooks for a TensorFlow run (`runner/frameworks/parts.py`'s Protocol).

`TFRunParts` has the hooks (state, switch effects, math, FLOP count, profile window, the
threshold checkpoint: named variables through `checkpoint.py`'s .npz writer and checked
reader); `rebuild_threshold_model` rebuilds a run's model for `perfsuite infer` and `eval`.
The device seam, `TFBackend`, is `perfsuite/backends/tensorflow.py`. TensorFlow is imported
only through a backend, when a TensorFlow run starts.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from perfsuite.backends.device import parse_device
from perfsuite.backends.tensorflow import POLICIES, PRECISION_DTYPES, TFBackend, require_tensorflow
from perfsuite.flops.tf_graph import count_step
from perfsuite.hostinfo import native_on_cpu
from perfsuite.record import RecordError
from perfsuite.record.maths import math_fields
from perfsuite.runner.frameworks import tf_profile
from perfsuite.runner.record.checkpoint import checkpoint_path, load_arrays, save_arrays
from perfsuite.workloads.base import one_cycle
from perfsuite.workloads.digits.tensorflow import LossScale, SGDState, make_step_fn
from perfsuite.workloads.switches import parse_switches


class TFTrainState:
    """Everything the TensorFlow step touches; `snapshot`/`restore` serve `detour`."""

    def __init__(self, model: Any, opt: Any, step_fn: Any, schedule: Any, recipe: Any,
                 backend: TFBackend, precision: str | None, layout: str,
                 loss_scale: Any = None) -> None:  # fmt: skip
        self.model = self.module = model
        self.optimizer, self.step_fn, self.schedule = opt, step_fn, schedule
        self.recipe, self.backend = recipe, backend
        self.precision, self.layout, self.loss_scale = precision, layout, loss_scale
        self.scaler = loss_scale
        self.step = 0
        self.extras: dict[str, Any] = {}

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def _variables(self) -> list[Any]:
        extra = self.loss_scale.variables if self.loss_scale is not None else []
        return self.model.variables + self.optimizer.buffers + extra

    def snapshot(self) -> dict[str, Any]:
        return {"vars": [v.numpy().copy() for v in self._variables()], "step": self.step}

    def restore(self, snap: dict[str, Any]) -> None:
        for v, value in zip(self._variables(), snap["vars"], strict=True):
            v.assign(value)
        self.step = snap["step"]


class TFRunParts:
    """The runner's framework hooks for a TensorFlow workload (see runner/frameworks/parts.py)."""

    framework = "tensorflow"

    def apply_process_switches(self, switches: Any) -> Any:
        return lambda: None

    def check_switches(self, switches: Any, backend: TFBackend) -> None:
        """One-line ValueError for a switch this device cannot run, before any run folder."""
        if self._layout(switches) == "nchw" and not backend.device.is_gpu:
            raise ValueError(
                "switch layout=nchw: TensorFlow runs NCHW convolutions only on GPUs "
                "(its CPU Conv2D supports NHWC only); use layout=nhwc on --device cpu"
            )

    def _layout(self, switches: Any) -> str:
        return switches.layout or "nhwc"

    def load_data(self, wl: Any, data_dir: str | None, backend: TFBackend, switches: Any) -> Any:
        return wl.load_data(data_dir, None, layout=self._layout(switches))

    def build_model(self, wl: Any, recipe: Any, backend: TFBackend, switches: Any,
                    seed: int) -> Any:  # fmt: skip
        self.check_switches(switches, backend)
        layout = self._layout(switches)
        dtype = PRECISION_DTYPES.get(switches.precision or "", "float32")
        return wl.build_model(recipe, seed=seed, layout=layout, compute_dtype=dtype)

    def build_state(self, wl: Any, recipe: Any, model: Any, steps_per_epoch: int,
                    backend: TFBackend, switches: Any) -> TFTrainState:  # fmt: skip
        opt = SGDState(model.trainable, recipe)
        scale = LossScale() if switches.precision == "fp16" else None
        step_fn = make_step_fn(model, opt, recipe, wl.num_classes, scale)
        return TFTrainState(model, opt, step_fn, one_cycle(recipe, steps_per_epoch), recipe,
                            backend, switches.precision, self._layout(switches), scale)  # fmt: skip

    def parameter_count(self, model: Any) -> int:
        return int(sum(v.shape.num_elements() for v in model.trainable))

    def watch_first_layer(self, state: TFTrainState) -> tuple[dict[str, Any], Any]:
        """Filled after the warm-up from the traced graph (see `_first_conv`)."""
        return {}, lambda: None

    def _first_conv(self, state: TFTrainState) -> dict[str, Any]:
        """The first Conv2D of the traced step: its dtype and data_format, read from the graph."""
        for fn in state.step_fn._list_all_concrete_functions():
            for op in fn.graph.get_operations():
                if op.type == "Conv2D":
                    fmt = op.get_attr("data_format").decode()
                    return {
                        "layer": "Conv2D",
                        "output_dtype": op.outputs[0].dtype.name,
                        "output_memory_format": "channels_last (NHWC)"
                        if fmt == "NHWC"
                        else "channels_first (NCHW)",
                    }
        return {}

    def switch_effects(self, state: TFTrainState, switches: Any, seen: dict[str, Any]) -> dict:
        seen.update(self._first_conv(state))
        return {
            "autocast": PRECISION_DTYPES.get(state.precision or ""),
            "mixed_precision_policy": POLICIES.get(state.precision or "", "float32"),
            "loss_scaling": "dynamic (perfsuite LossScale, GradScaler's rule)"
            if state.loss_scale is not None
            else None,
            "parameter_dtype": state.model.trainable[0].dtype.name,
            "first_layer": seen or None,
            "parameter_memory_format": "HWIO kernels (TensorFlow's only kernel layout)",
            "layout": state.layout,
            "compiled": "tf.function (graph mode, XLA off)",
            "batch_size": state.recipe.batch_size,
            "lr": state.recipe.lr,
            "lr_rule": switches.lr_rule,
            "label_smoothing": state.recipe.label_smoothing,
            "tta": state.recipe.extra.get("tta_flip"),
            "source": "read back from the variables and the traced tf.function graph after "
            "the warm-up",
        }

    def math_section(self, state: TFTrainState, seen: dict[str, Any]) -> dict[str, Any]:
        tf = state.backend.tf
        tf32 = bool(tf.config.experimental.tensor_float_32_execution_enabled())
        compute = PRECISION_DTYPES.get(state.precision or "")
        return math_fields(
            cudnn_tf32=tf32,
            matmul_tf32=tf32,
            autocast_dtype=compute,
            autocast_native=None if state.backend.device.is_gpu else native_on_cpu(compute),
            param_dtype="float32",
            activation_dtype=seen.get("output_dtype") or compute or "float32",
            framework=("tensorflow", str(tf.__version__)),
            source="read from TensorFlow at run time (tensor_float_32_execution_enabled; "
            "applies on NVIDIA GPUs only) and the traced graph",
            provenance="measured",
        )

    def count_step_work(self, wl: Any, state: TFTrainState, batch: Any) -> dict[str, Any]:
        return count_step(state, batch)

    def profile_window(self, run_dir: Any, backend: TFBackend, wl: Any, state: TFTrainState,
                       batches: Any, active: int) -> dict[str, Any] | None:  # fmt: skip
        return tf_profile.profile_window(run_dir, wl, state, batches, active)

    def save_threshold_model(self, run_dir: Any, module: Any, **where: Any) -> dict[str, Any]:
        """The model's variables (batch-norm statistics included) as named arrays (.npz)."""
        arrays = {k: v.numpy() for k, v in module.named_variables().items()}
        return save_arrays(run_dir, arrays, **where)

    def threshold_model(self, record: dict[str, Any], module: Any) -> Any:
        """A copy of `module` holding the checkpoint's variables."""
        model = copy.deepcopy(module)
        load_threshold_variables(record, model)
        return model

    def zero_loss(self, backend: TFBackend) -> Any:
        return backend.tf.zeros((), "float32")

    def add_loss(self, total: Any, loss: Any) -> Any:
        return total + self._tf().cast(loss, "float32")

    def _tf(self) -> Any:
        return require_tensorflow()


def load_threshold_variables(record: dict[str, Any], model: Any) -> None:
    """Assign the threshold checkpoint (checked by size, SHA-256, names and shapes) to
    `model`'s variables; a dtype that differs is a one-line RecordError too."""
    named = model.named_variables()
    arrays = load_arrays(record, {k: tuple(v.shape) for k, v in named.items()})
    for k, v in named.items():
        if arrays[k].dtype != v.dtype.as_numpy_dtype:
            raise RecordError(
                f"{checkpoint_path(record)}: field checkpoint.file: variable {k} is "
                f"{arrays[k].dtype}, the rebuilt model's is {v.dtype.name}"
            )
    for k, v in named.items():
        v.assign(arrays[k])


def rebuild_threshold_model(record: dict[str, Any], wl: Any, recipe: Any,
                            device: str) -> tuple[Any, Any]:  # fmt: skip
    """The TensorFlow model of a loaded run record (its switches: layout, precision) holding
    its threshold checkpoint; returns (model, switches)."""
    config = record.get("config") or {}
    try:
        switches = parse_switches(list(config.get("switches") or []), wl.switches, wl.name)
    except ValueError as exc:
        raise RecordError(
            f"{record.get('_path', '<record>')}: field config.switches: {exc}"
        ) from None
    backend = TFBackend(parse_device(device))
    model = TFRunParts().build_model(wl, recipe, backend, switches, int(config.get("seed") or 0))
    load_threshold_variables(record, model)
    return model, switches
