"""`cifar10 --framework tensorflow`: the ResNet-9-style cifar10 workload written in TensorFlow.

The same network as the ResNet-9 family (resnet9.py's `build_resnet9`: conv-BN-ReLU stages
with the same widths, max-pool downsampling, two residual blocks, global max-pool, bias-free
linear head scaled by 1/8), the same recipes (`cpu`, `dawnbench`: Nesterov SGD with coupled
weight decay on conv/linear weights, one-cycle schedule per step, label smoothing), the same
data (the cifar10/data.py loaders, the same normalization and `train_limit` subset,
reflect-pad 4 + per-image random crop and horizontal flip) and test-time flip averaging. Like
digits/tensorflow.py it is written on plain `tf.Variable`s and fused `tf.nn` ops with
PyTorch's init distributions and SGD arithmetic, trained by one tf.function step
(digits/tensorflow.py's `make_step_fn`, `SGDState`). The airbench family (`cpu-fast`,
`airbench`) has no TensorFlow version. Differences from the PyTorch version are listed in
docs/tensorflow.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from perfsuite.workloads.base import Recipe
from perfsuite.workloads.cifar10.data import balanced_subset, find_cifar10
from perfsuite.workloads.cifar10.resnet9 import PRESETS, ResNet9Workload, resnet9_channels
from perfsuite.workloads.cifar10.task import MEAN, STD
from perfsuite.workloads.data import Batch
from perfsuite.workloads.digits.tensorflow import (
    ArraySource,
    DigitsNet,
    TFDigitsWorkload,
    batch_norm_variables,
    uniform_init,
)

PAD = 4  # reflect padding of the random crop, as in the PyTorch workload
HEAD_SCALE = 0.125  # build_resnet9's Scale(0.125) after the linear head


class CifarArraySource(ArraySource):
    """CIFAR-10 in host memory (NHWC float32, normalized), batches as tf tensors.

    The training images are reflect-padded by 4 once at setup (as the PyTorch workload does);
    each batch gets a random 32x32 crop and a random horizontal flip per image, drawn from the
    backend's numpy Generator. Training index i reads image i mod len(train_x), which lets the
    synthetic source serve a full epoch from a small pool."""

    def __init__(self, train_x: Any, train_y: Any, test_x: Any, test_y: Any, *, layout: str,
                 description: str, num_train: int | None = None) -> None:  # fmt: skip
        import numpy as np

        padded = np.pad(train_x, ((0, 0), (PAD, PAD), (PAD, PAD), (0, 0)), mode="reflect")
        super().__init__(padded, train_y, test_x, test_y, shift=0, layout=layout,
                         description=description)  # fmt: skip
        self.num_train = num_train or len(train_y)

    def _crop_flip(self, padded: Any, generator: Any) -> Any:
        import numpy as np

        b, size = len(padded), padded.shape[1] - 2 * PAD
        dy = generator.integers(0, 2 * PAD + 1, size=b)
        dx = generator.integers(0, 2 * PAD + 1, size=b)
        ar = np.arange(size)
        rows = (dy[:, None] + ar)[:, :, None]
        cols = (dx[:, None] + ar)[:, None, :]
        out = padded[np.arange(b)[:, None, None], rows, cols]  # (b, size, size, C)
        flip = generator.random(b) < 0.5
        return np.where(flip[:, None, None, None], out[:, :, ::-1, :], out)

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import tensorflow as tf

        perm = generator.permutation(self.num_train)
        pool = len(self.train_y)
        for i in range(0, self.num_train, batch_size):
            idx = perm[i : i + batch_size] % pool
            x = self._crop_flip(self.train_x[idx], generator)
            yield Batch((self._tensor(x),), tf.constant(self.train_y[idx]), len(idx))


class ResNet9Net(DigitsNet):
    """build_resnet9 on tf.Variables (HWIO kernels, PyTorch's U(+-1/sqrt(fan_in)) init, BN
    gamma 1 / beta 0, eps 1e-5, momentum 0.1). Reuses DigitsNet's fused batch norm, variable
    lists and compute-dtype casting; `plan` lists the stages in build_resnet9's order."""

    def __init__(self, width: float, num_classes: int, seed: int, layout: str,
                 compute_dtype: str = "float32") -> None:  # fmt: skip
        import numpy as np
        import tensorflow as tf

        rng = np.random.default_rng(seed)
        self.layout, self.compute_dtype = layout, compute_dtype
        self.fmt = "NCHW" if layout == "nchw" else "NHWC"
        c = resnet9_channels(width)
        self.plan = ["cbr", "cbr", "pool", "res", "cbr", "pool", "cbr", "pool", "res"]
        pairs = [(3, c[0]), (c[0], c[1]), (c[1], c[1]), (c[1], c[1]), (c[1], c[2]),
                 (c[2], c[3]), (c[3], c[3]), (c[3], c[3])]  # fmt: skip
        self.convs, self.bns = [], []
        for i, (cin, cout) in enumerate(pairs):
            w = uniform_init(rng, (3, 3, cin, cout), cin * 9)
            self.convs.append(tf.Variable(w, name=f"conv{i}/kernel"))
            self.bns.append(batch_norm_variables(i, cout))
        w = uniform_init(rng, (c[3], num_classes), c[3])
        self.dense_w = tf.Variable(w, name="dense/kernel")

    @property
    def trainable(self) -> list[Any]:
        out = []
        for conv, bn in zip(self.convs, self.bns, strict=True):
            out += [conv, bn["gamma"], bn["beta"]]
        return [*out, self.dense_w]

    def _cbr(self, h: Any, i: int, training: bool) -> Any:
        import tensorflow as tf

        h = tf.nn.conv2d(h, tf.cast(self.convs[i], self.compute_dtype), 1, "SAME",
                         data_format=self.fmt)  # fmt: skip
        return tf.nn.relu(self._batch_norm(h, self.bns[i], training))

    def __call__(self, x: Any, training: bool) -> Any:
        """Logits (float32) for a batch in this model's layout."""
        import tensorflow as tf

        h = tf.cast(x, self.compute_dtype)
        i = 0
        for stage in self.plan:
            if stage == "pool":
                h = tf.nn.max_pool2d(h, 2, 2, "VALID", data_format=self.fmt)
            elif stage == "cbr":
                h, i = self._cbr(h, i, training), i + 1
            else:  # residual: x + cbr(cbr(x))
                h, i = h + self._cbr(self._cbr(h, i, training), i + 1, training), i + 2
        # Global max-pool as one MaxPool over the whole map (4x4 for 32x32 inputs): the same
        # op PyTorch's AdaptiveMaxPool2d(1) computes, and MaxPool/MaxPoolGrad in the graph.
        side = h.shape[2] if self.fmt == "NCHW" else h.shape[1]
        h = tf.nn.max_pool2d(h, side, side, "VALID", data_format=self.fmt)
        h = tf.reshape(h, [-1, h.shape[1] if self.fmt == "NCHW" else h.shape[3]])
        logits = tf.matmul(h, tf.cast(self.dense_w, self.compute_dtype)) * HEAD_SCALE
        return tf.cast(logits, "float32")


class TFCifar10Workload(ResNet9Workload):
    """cifar10 (ResNet-9 family) in TensorFlow; the step, evaluation and training call are
    digits/tensorflow.py's (framework code, not workload code), the rest is the PyTorch
    workload's."""

    framework = "tensorflow"
    switches = frozenset(
        {"bf16", "fp16", "channels_last", "layout", "lr_rule", "label_smoothing", "tta"}
    )
    train_step = TFDigitsWorkload.train_step
    evaluate = TFDigitsWorkload.evaluate
    _synthetic: CifarArraySource | None = None

    def configure(self, recipe: Recipe) -> None:
        if recipe.extra.get("family"):
            raise ValueError("cifar10 --framework tensorflow: only the ResNet-9 recipes "
                             "(cpu, dawnbench) have a TensorFlow version")  # fmt: skip
        self.recipe = recipe

    def model_name(self, recipe: Recipe) -> str:
        return f"ResNet-9 style, width x{recipe.extra.get('width', 1.0)} (TensorFlow)"

    def build_model(self, recipe: Recipe | None = None, *, seed: int = 0, layout: str = "nhwc",
                    compute_dtype: str = "float32") -> ResNet9Net:  # fmt: skip
        width = float((recipe or self.recipe or PRESETS["cpu"]).extra.get("width", 1.0))
        if self._synthetic is not None:  # made before the layout was known (see synthetic_data)
            self._synthetic.layout = layout
        return ResNet9Net(width, self.num_classes, seed, layout, compute_dtype)

    def _limit(self) -> int:
        return int((self.recipe.extra if self.recipe else {}).get("train_limit", 0) or 0)

    def load_data(self, data_dir: str | None, device: Any, layout: str = "nhwc") -> ArraySource:
        """The PyTorch workload's arrays (find_cifar10, balanced `train_limit` subset, the same
        per-channel normalization), kept NHWC in host memory."""
        import numpy as np

        if (self.recipe.extra if self.recipe else {}).get("data") == "workers":
            raise ValueError("switch data=workers is not available with --framework tensorflow")
        arrays, where = find_cifar10(data_dir, download=self.download)
        limit = self._limit()
        mean, std = np.asarray(MEAN, "float32"), np.asarray(STD, "float32")

        def prep(images: Any, labels: Any, per_class: int) -> tuple[Any, Any]:
            images, labels = balanced_subset(images, labels, per_class)
            return ((images.astype("float32") - mean) / std), labels

        train_x, train_y = prep(*arrays["train"], max(1, limit // 10) if limit else 0)
        test_x, test_y = prep(*arrays["test"], 0)
        if limit:
            where += f" (training subset: {len(train_y)} images)"
        return CifarArraySource(train_x, train_y, test_x, test_y, layout=layout,
                                description=where)  # fmt: skip

    def synthetic_data(self, device: Any, seed: int, layout: str = "nhwc") -> ArraySource:
        """Random normal NHWC images and random labels: a pool of at most 4,096 images serves
        `train_limit` (or 50,000) training examples per epoch; the evaluation set is capped
        at `train_limit` (as in the PyTorch workload's synthetic source) and at the pool."""
        import numpy as np

        limit = self._limit()
        num_train = limit or self.train_size
        num_eval = min(self.eval_size, limit) if limit else self.eval_size
        rng = np.random.default_rng(seed)
        pool = min(4096, max(num_train, num_eval))
        num_eval = min(num_eval, pool)
        x = rng.standard_normal((pool, 32, 32, 3), dtype="float32")
        y = rng.integers(0, self.num_classes, pool)
        desc = (f"synthetic: random 32x32x3 inputs and random labels ({num_train} train / "
                f"{num_eval} eval per epoch); accuracy is chance level")  # fmt: skip
        source = CifarArraySource(x, y, x[:num_eval], y[:num_eval], layout=layout,
                                  description=desc, num_train=num_train)  # fmt: skip
        source.kind = "synthetic"
        self._synthetic = source  # the runner asks for it without the layout; build_model sets it
        return source

    def predict(self, model: Any, *inputs: Any) -> Any:
        """Logits, plus those of the horizontally flipped batch when `tta_flip` is on."""
        import tensorflow as tf

        (x,) = inputs
        logits = model(x, training=False)
        if self.recipe is None or bool(self.recipe.extra.get("tta_flip", True)):
            width_axis = 3 if model.fmt == "NCHW" else 2
            logits = logits + model(tf.reverse(x, [width_axis]), training=False)
        return logits
