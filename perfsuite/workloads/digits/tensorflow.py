"""`digits --framework tensorflow`: the digits workload written in TensorFlow.

The same network (three 3x3 conv + batch-norm + ReLU blocks, one 2x2 max-pool, global average
pool, linear), the same recipe (SGD with Nesterov momentum, coupled weight decay on conv and
linear weights only, one-cycle schedule per step, label smoothing) and the same data (the
stratified split and normalization of `digits/workload.py`, random +-1 pixel translation per
batch). It is written on plain `tf.Variable`s and `tf.nn` ops rather than Keras layers so that
the graph holds the fused kernels the FLOP counter maps one to one onto the PyTorch ops
(FusedBatchNormV3, Conv2D...), and the optimizer update is spelled out with PyTorch's SGD
arithmetic. Every difference from the PyTorch version is listed in docs/tensorflow.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from perfsuite.workloads.base import Recipe
from perfsuite.workloads.data import Batch
from perfsuite.workloads.digits.workload import DigitsWorkload, digits_split
from perfsuite.workloads.state import no_phase

BN_EPS = 1e-5  # PyTorch's BatchNorm2d default (Keras uses 1e-3)
BN_MOMENTUM = 0.1  # PyTorch's convention: running = 0.9 running + 0.1 batch


class ArraySource:
    """The digits arrays in host memory (NHWC or NCHW), batches as tf tensors.

    Shuffling and the translation draw use the numpy Generator the TF backend hands out."""

    kind = "in-memory"

    def __init__(self, train_x: Any, train_y: Any, test_x: Any, test_y: Any, *, shift: int,
                 layout: str, description: str) -> None:  # fmt: skip
        self.train_x, self.train_y, self.test_x, self.test_y = train_x, train_y, test_x, test_y
        self.shift, self.layout, self.description = shift, layout, description
        self.num_train, self.num_eval = len(train_y), len(test_y)

    def _tensor(self, x: Any) -> Any:
        import numpy as np
        import tensorflow as tf

        if self.layout == "nchw":
            x = np.transpose(x, (0, 3, 1, 2))
        return tf.constant(np.ascontiguousarray(x))

    def _augment(self, x: Any, generator: Any) -> Any:
        """One random crop of 8x8 from the batch zero-padded by `shift` (one offset a batch)."""
        import numpy as np

        s = self.shift
        dy, dx = generator.integers(0, 2 * s + 1, size=2)
        padded = np.pad(x, ((0, 0), (s, s), (s, s), (0, 0)))
        return padded[:, dy : dy + x.shape[1], dx : dx + x.shape[2], :]

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import tensorflow as tf

        perm = generator.permutation(self.num_train)
        for i in range(0, self.num_train, batch_size):
            idx = perm[i : i + batch_size]
            x = self.train_x[idx]
            if self.shift:
                x = self._augment(x, generator)
            yield Batch((self._tensor(x),), tf.constant(self.train_y[idx]), len(idx))

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        import tensorflow as tf

        for i in range(0, self.num_eval, batch_size):
            y = self.test_y[i : i + batch_size]
            yield Batch((self._tensor(self.test_x[i : i + batch_size]),), tf.constant(y), len(y))

    def sample(self, n: int) -> Batch:
        import tensorflow as tf

        n = min(n, self.num_eval)
        return Batch((self._tensor(self.test_x[:n]),), tf.constant(self.test_y[:n]), n)

    def close(self) -> None:
        return None


def uniform_init(rng: Any, shape: tuple[int, ...], fan_in: int) -> Any:
    """PyTorch's default conv/linear init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype("float32")


def batch_norm_variables(i: int, channels: int) -> dict[str, Any]:
    """PyTorch's BatchNorm2d state: gamma 1, beta 0, running mean 0 and variance 1."""
    import numpy as np
    import tensorflow as tf

    return {
        "gamma": tf.Variable(np.ones(channels, "float32"), name=f"bn{i}/gamma"),
        "beta": tf.Variable(np.zeros(channels, "float32"), name=f"bn{i}/beta"),
        "mean": tf.Variable(np.zeros(channels, "float32"), trainable=False),
        "var": tf.Variable(np.ones(channels, "float32"), trainable=False),
    }


class DigitsNet:
    """The digits CNN on tf.Variables. `compute_dtype` is the mixed-precision policy's compute
    type (variables stay float32 and are cast on use, as Keras' mixed_* policies do)."""

    def __init__(self, width: int, num_classes: int, seed: int, layout: str,
                 compute_dtype: str = "float32") -> None:  # fmt: skip
        import numpy as np
        import tensorflow as tf

        rng = np.random.default_rng(seed)
        self.layout, self.compute_dtype = layout, compute_dtype
        self.fmt = "NCHW" if layout == "nchw" else "NHWC"
        chans = [1, width, 2 * width, 4 * width]
        self.convs, self.bns = [], []
        for i in range(3):
            cin, cout = chans[i], chans[i + 1]
            w = uniform_init(rng, (3, 3, cin, cout), cin * 9)  # HWIO
            self.convs.append(tf.Variable(w, name=f"conv{i}/kernel"))
            self.bns.append(batch_norm_variables(i, cout))
        feat = chans[-1]
        self.dense_w = tf.Variable(
            uniform_init(rng, (feat, num_classes), feat), name="dense/kernel"
        )
        self.dense_b = tf.Variable(uniform_init(rng, (num_classes,), feat), name="dense/bias")

    @property
    def trainable(self) -> list[Any]:
        out = []
        for conv, bn in zip(self.convs, self.bns, strict=True):
            out += [conv, bn["gamma"], bn["beta"]]
        return [*out, self.dense_w, self.dense_b]

    @property
    def variables(self) -> list[Any]:
        return self.trainable + [v for bn in self.bns for v in (bn["mean"], bn["var"])]

    def named_variables(self) -> dict[str, Any]:
        """Every variable (batch-norm running statistics included) under a name that depends
        on the network's structure only: the keys of the threshold checkpoint."""
        out: dict[str, Any] = {}
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            out[f"conv{i}/kernel"] = conv
            for key in ("gamma", "beta", "mean", "var"):
                out[f"bn{i}/{key}"] = bn[key]
        out["dense/kernel"] = self.dense_w
        if getattr(self, "dense_b", None) is not None:  # ResNet9Net's head has no bias
            out["dense/bias"] = self.dense_b
        return out

    def __call__(self, x: Any, training: bool) -> Any:
        """Logits (float32) for a batch in this model's layout."""
        import tensorflow as tf

        dt = self.compute_dtype
        h = tf.cast(x, dt)
        spatial = [2, 3] if self.fmt == "NCHW" else [1, 2]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            h = tf.nn.conv2d(h, tf.cast(conv, dt), 1, "SAME", data_format=self.fmt)
            h = self._batch_norm(h, bn, training)
            h = tf.nn.relu(h)
            if i == 1:
                h = tf.nn.max_pool2d(h, 2, 2, "VALID", data_format=self.fmt)
        h = tf.reduce_mean(h, axis=spatial)
        logits = tf.nn.bias_add(tf.matmul(h, tf.cast(self.dense_w, dt)), tf.cast(self.dense_b, dt))
        return tf.cast(logits, "float32")

    def _batch_norm(self, h: Any, bn: dict[str, Any], training: bool) -> Any:
        """Fused batch norm; in training it also returns the updated running statistics (with
        the unbiased batch variance, as PyTorch keeps them), which are assigned here."""
        import tensorflow as tf

        y, mean, var = tf.compat.v1.nn.fused_batch_norm(
            h,
            bn["gamma"],
            bn["beta"],
            mean=bn["mean"],
            variance=bn["var"],
            epsilon=BN_EPS,
            data_format=self.fmt,
            is_training=training,
            exponential_avg_factor=BN_MOMENTUM if training else 1.0,
        )
        if training:
            bn["mean"].assign(mean)
            bn["var"].assign(var)
        return y


class SGDState:
    """Momentum buffers of PyTorch-style SGD: d = g + wd*p; b = m*b + d; d = d + m*b
    (Nesterov); p -= lr*d. The buffer starts at zero, which equals PyTorch's first-step
    b = d because dampening is 0."""

    def __init__(self, params: list[Any], recipe: Recipe) -> None:
        import tensorflow as tf

        self.params = params
        self.buffers = [tf.Variable(tf.zeros_like(p), trainable=False) for p in params]
        self.momentum, self.nesterov = float(recipe.momentum), bool(recipe.nesterov)
        self.decay = [float(recipe.weight_decay) if p.shape.rank > 1 else 0.0 for p in params]

    def apply(self, grads: list[Any], lr: Any) -> None:
        m = self.momentum
        for p, g, b, wd in zip(self.params, grads, self.buffers, self.decay, strict=True):
            d = g + wd * p if wd else g
            b.assign(m * b + d)
            d = d + m * b if self.nesterov else b
            p.assign_sub(lr * d)


class LossScale:
    """Dynamic loss scaling for float16 (GradScaler's rule): start at 2**16, halve and skip
    the step on non-finite gradients, double after 2000 finite steps."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.scale = tf.Variable(2.0**16, trainable=False)
        self.good = tf.Variable(0, dtype="int64", trainable=False)

    @property
    def variables(self) -> list[Any]:
        return [self.scale, self.good]


def make_step_fn(model: DigitsNet, opt: SGDState, recipe: Recipe, num_classes: int,
                 loss_scale: LossScale | None = None) -> Any:  # fmt: skip
    """The training step as one tf.function (graph mode, no XLA): forward and loss under the
    name scope `forward`, gradients under `backward` (with TensorFlow's own `gradient_tape/`),
    the update under `optimizer`; the FLOP counter reads the phases from these scopes."""
    import tensorflow as tf

    smoothing = float(recipe.label_smoothing)

    @tf.function
    def step(x: Any, y: Any, lr: Any) -> Any:
        with tf.GradientTape() as tape, tf.name_scope("forward"):
            logits = model(x, training=True)
            target = tf.one_hot(y, num_classes) * (1.0 - smoothing) + smoothing / num_classes
            loss = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=target, logits=logits)
            )
            scaled = loss * loss_scale.scale if loss_scale is not None else loss
        with tf.name_scope("backward"):  # also the tape's gradient sums (AddN), unscoped else
            grads = tape.gradient(scaled, model.trainable)
        with tf.name_scope("optimizer"):
            if loss_scale is None:
                opt.apply(grads, lr)
            else:
                _scaled_apply(opt, loss_scale, grads, lr)
        return loss

    return step


def _scaled_apply(opt: SGDState, ls: LossScale, grads: list[Any], lr: Any) -> None:
    import tensorflow as tf

    grads = [g / ls.scale for g in grads]
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

    def apply() -> Any:
        opt.apply(grads, lr)
        ls.good.assign_add(1)
        grow = ls.good >= 2000
        ls.scale.assign(tf.where(grow, ls.scale * 2.0, ls.scale))
        ls.good.assign(tf.where(grow, tf.constant(0, "int64"), ls.good))
        return tf.constant(True)

    def skip() -> Any:
        ls.scale.assign(ls.scale / 2.0)
        ls.good.assign(0)
        return tf.constant(False)

    tf.cond(finite, apply, skip)


class TFDigitsWorkload(DigitsWorkload):
    """Digits in TensorFlow; model, data and step differ, everything else is inherited."""

    framework = "tensorflow"
    switches = frozenset({"bf16", "fp16", "channels_last", "layout", "lr_rule", "label_smoothing"})

    def model_name(self, recipe: Recipe) -> str:
        return f"digits CNN, width {recipe.extra.get('width', 32)} (TensorFlow)"

    def build_model(self, recipe: Recipe | None = None, *, seed: int = 0, layout: str = "nhwc",
                    compute_dtype: str = "float32") -> DigitsNet:  # fmt: skip
        width = int((recipe or self.default_recipe()).extra.get("width", 32))
        return DigitsNet(width, self.num_classes, seed, layout, compute_dtype)

    def load_data(self, data_dir: str | None, device: Any, layout: str = "nhwc") -> ArraySource:
        images, labels, train, test, mean, std = digits_split()
        x = ((images - mean) / std)[..., None]  # NHWC
        shift = int((self.recipe or self.default_recipe()).extra.get("shift", 1))
        return ArraySource(x[train], labels[train], x[test], labels[test], shift=shift,
                           layout=layout, description=self.dataset)  # fmt: skip

    def synthetic_data(self, device: Any, seed: int) -> Any:
        raise ValueError("--synthetic is not available with --framework tensorflow")

    def train_step(self, state: Any, batch: Batch, phase: Any = no_phase) -> Any:
        """One step of the compiled (tf.function) step; returns the loss tensor."""
        import tensorflow as tf

        lr = state.recipe.lr * state.schedule(state.step)
        loss = state.step_fn(batch.inputs[0], batch.target, tf.constant(lr, tf.float32))
        state.step += 1
        return loss

    def evaluate(self, model: Any, data: Any, batch_size: int = 1024) -> dict[str, float]:
        correct = 0
        for b in data.eval_batches(batch_size):
            pred = self.predict(model, *b.inputs).numpy().argmax(1)
            correct += int((pred == b.target.numpy()).sum())
        return {"top1": correct / data.num_eval}

    def predict(self, model: Any, *inputs: Any) -> Any:
        return model(inputs[0], training=False)
