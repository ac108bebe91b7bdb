"""The TensorFlow backend: the device seam of a TensorFlow run, beside `pytorch.py`.

`TFBackend` has the TorchBackend methods (sync, autocast, NVTX range, generators, seeds,
threads, version, the inference model and no-grad context). TensorFlow is imported only when a
TensorFlow backend is built: `import perfsuite` never imports it, and a missing TensorFlow is a
one-line error naming the extra to install. The runner's TensorFlow hooks (train state, switch
effects, FLOP count, threshold checkpoint) are `perfsuite/runner/frameworks/tf_parts.py`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from perfsuite.backends.device import Device, cpu_hardware
from perfsuite.hostinfo import cpu_model, usable_cpus

MISSING = (
    "--framework tensorflow needs TensorFlow: pip install perfsuite[tensorflow] "
    "(CPU only: pip install tensorflow-cpu)"
)
PRECISION_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
POLICIES = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def require_tensorflow() -> Any:
    """The tensorflow module, or ValueError(MISSING) (one line) when it is not installed."""
    # TensorFlow's C++ start-up notices (CPU feature guard, oneDNN) are INFO lines printed
    # on the user's terminal at import, before any run folder exists (chatter is
    # not the terminal's); level 1 drops INFO and keeps warnings and errors. A level the
    # user set wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    try:
        import tensorflow as tf
    except ImportError:
        raise ValueError(MISSING) from None
    return tf


class GraphModel:
    """A model whose inference call runs as one `tf.function` graph (XLA off), as TensorFlow
    models are served: `infer --mode compile` for TensorFlow runs. Why: eager mode dispatches
    every op from Python, which dominates a batch-1 call on a small network. The graph is
    traced in the untimed warm-up (one trace per input shape, batch-1 shapes are all alike);
    every other attribute is the eager model's."""

    def __init__(self, model: Any, tf: Any) -> None:
        self.eager_model = model
        self._graph = tf.function(lambda x: model(x, training=False), reduce_retracing=True)

    def __call__(self, x: Any, training: bool = False) -> Any:
        if training:
            raise ValueError("GraphModel is for inference: training=True is not traced")
        return self._graph(x)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.eager_model, name)


class TFBackend:
    """One device seen through TensorFlow. Holds no state but the device."""

    framework = "tensorflow"

    def __init__(self, device: Device) -> None:
        self.device = device
        self.tf = require_tensorflow()
        self.torch_device = None  # the runner asks TFRunParts for data and models instead

    @property
    def version(self) -> str:
        return str(self.tf.__version__)

    def check_available(self) -> None:
        if self.device.is_gpu:
            gpus = self.tf.config.list_physical_devices("GPU")
            if (self.device.index or 0) >= len(gpus):
                raise ValueError(f"--device {self.device}: TensorFlow sees {len(gpus)} GPU(s)")

    def sync(self) -> None:
        """Wait for queued device work (GPU only; CPU ops finish before they return)."""
        if self.device.is_gpu:
            self.tf.test.experimental.sync_devices()

    def autocast(self, precision: str | None) -> contextlib.AbstractContextManager[Any]:
        """Nothing: the mixed-precision policy is built into the model (compute dtype)."""
        return contextlib.nullcontext()

    def inference_model(self, model: Any, mode: str, precision: str) -> Any:
        """`model` computing in `precision` (the mixed-precision policy's compute dtype, which
        the model casts to on every call; variables stay float32); `mode` "compile": its
        inference call traced into a graph (GraphModel). cudagraphs is refused earlier
        (`inference.check_mode`)."""
        model = getattr(model, "eager_model", model)
        model.compute_dtype = PRECISION_DTYPES.get(precision, "float32")
        return GraphModel(model, self.tf) if mode == "compile" else model

    def no_grad(self) -> contextlib.AbstractContextManager[Any]:
        """Nothing: `predict` calls the model with training=False and no gradient tape."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def nvtx_range(self, name: str) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def op_ranges(self) -> Iterator[None]:
        yield

    def generator(self, seed: int) -> Any:
        """A numpy Generator: shuffling and augmentation draws happen on the host."""
        import numpy as np

        return np.random.default_rng(seed)

    def seed_all(self, seed: int) -> None:
        self.tf.random.set_seed(seed)

    def set_threads(self, threads: int | None) -> None:
        """TensorFlow's pools, and torch's too: the device ceilings of the record are measured
        with torch kernels in this process and must run at the run's thread count."""
        if threads:
            with contextlib.suppress(RuntimeError):  # after TF's runtime started: too late
                self.tf.config.threading.set_intra_op_parallelism_threads(threads)
                self.tf.config.threading.set_inter_op_parallelism_threads(threads)
            with contextlib.suppress(ImportError):
                import torch

                torch.set_num_threads(threads)

    def thread_count(self) -> int | None:
        """TensorFlow's intra-op pool size; None when TensorFlow picks it (setting 0)."""
        return self.tf.config.threading.get_intra_op_parallelism_threads() or None

    def hardware(self) -> dict[str, str]:
        """This device's name as the record's `hardware.name` gives it (GPU: the driver's
        name, as TensorFlow reports it)."""
        if self.device.is_gpu:
            gpu = self.tf.config.list_physical_devices("GPU")[self.device.gpu_index]
            details = self.tf.config.experimental.get_device_details(gpu)
            return {"name": str(details.get("device_name", gpu.name)), "accelerator": "cuda"}
        return cpu_hardware(cpu_model(), usable_cpus())
