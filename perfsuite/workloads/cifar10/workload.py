"""`cifar10`: the DAWNBench task (94% top-1 on the 10,000 test images).

Recipe of the DAWNBench-winner family, designed here: a ResNet-9-style network (conv-BN-ReLU
blocks, max-pool downsampling, two residual blocks, global max-pool, scaled linear head),
one-cycle learning rate, label smoothing, Nesterov SGD, random crop (reflect-pad 4) + horizontal
flip augmentation on the device, and test-time flip averaging. Presets: `dawnbench` (full width,
24 epochs, aimed at 94% on a GPU) and `cpu` (quarter width, 8 epochs, for lower CPU-feasible
thresholds such as 80%).

A second family, the airbench-style fast net (cifar10_fast.py, wired in cifar10_fast_seam.py),
has presets `airbench` (the paper's settings), `airbench_muon` (the record method after it:
Muon on the conv filters, cifar10_fast_muon.py) and `cpu-fast` (sized for a 2-core CPU); the
recipe's `extra["family"]` ("fast"; absent means ResNet-9) picks model, optimizer, loss,
augmentation, step and prediction. The default is `airbench` on GPUs and `cpu-fast` on CPU.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Phase, Recipe, Workload
from perfsuite.workloads.cifar10.airbench import workload as fast
from perfsuite.workloads.cifar10.airbench.net import FAST_RECIPES, fast_loss
from perfsuite.workloads.data import Batch, InMemorySource
from perfsuite.workloads.state import TrainState, no_phase
from perfsuite.workloads.switches import COMMON

# Per-channel statistics of the CIFAR-10 training set (0-255 scale).
MEAN = (125.31, 122.95, 113.87)
STD = (62.99, 62.09, 66.70)


def resnet9_channels(width: float) -> list[int]:
    """Channels of the four conv-BN-ReLU stages at `width` (shared with the TensorFlow net)."""
    return [max(8, round(w * width)) for w in (64, 128, 256, 512)]


def build_resnet9(width: float = 1.0, num_classes: int = 10, head_scale: float = 0.125) -> Any:
    from torch import nn

    c = resnet9_channels(width)

    def conv_bn(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
        )

    class Residual(nn.Module):
        def __init__(self, ch: int) -> None:
            super().__init__()
            self.body = nn.Sequential(conv_bn(ch, ch), conv_bn(ch, ch))

        def forward(self, x: Any) -> Any:
            return x + self.body(x)

    class Scale(nn.Module):
        def __init__(self, s: float) -> None:
            super().__init__()
            self.s = s

        def forward(self, x: Any) -> Any:
            return x * self.s

    return nn.Sequential(
        conv_bn(3, c[0]),
        conv_bn(c[0], c[1]),
        nn.MaxPool2d(2),
        Residual(c[1]),
        conv_bn(c[1], c[2]),
        nn.MaxPool2d(2),
        conv_bn(c[2], c[3]),
        nn.MaxPool2d(2),
        Residual(c[3]),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
        nn.Linear(c[3], num_classes, bias=False),
        Scale(head_scale),
    )


PRESETS: dict[str, Recipe] = {
    "dawnbench": Recipe(
        epochs=24,
        batch_size=512,
        lr=0.4,
        weight_decay=5e-4,
        label_smoothing=0.2,
        warmup_fraction=0.2,
        extra={"width": 1.0, "train_limit": 0, "tta_flip": True},
    ),
    "cpu": Recipe(
        epochs=8,
        batch_size=256,
        lr=0.3,
        weight_decay=5e-4,
        label_smoothing=0.2,
        warmup_fraction=0.25,
        extra={"width": 0.25, "train_limit": 0, "tta_flip": True},
    ),
}


class Cifar10Workload(Workload):
    name = "cifar10"
    task = "cifar10"
    metric = "top1"
    default_threshold = 0.94
    input_shape = (3, 32, 32)
    num_classes = 10
    dataset = "CIFAR-10 (50,000 train / 10,000 test, 32x32 RGB)"
    needs_data_dir = True
    train_size, eval_size = 50_000, 10_000
    switches = COMMON | {"label_smoothing", "tta", "data", "muon", "activation"}
    scheduler_interval = "step"  # both recipes' LambdaLR factors are per optimizer step
    image_stats = (MEAN, STD)  # to_images / from_images undo and apply this normalization
    class_names = (
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    )  # cifar_data.CLASSES, the canonical label order

    def __init__(self) -> None:
        self.download = False

    def presets(self) -> dict[str, Recipe]:
        return {**PRESETS, **FAST_RECIPES}

    def default_recipe(self, device: str = "cpu") -> Recipe:
        import copy

        name = "cpu-fast" if str(device).startswith("cpu") else "airbench"
        return copy.deepcopy(FAST_RECIPES[name])

    def configure(self, recipe: Recipe) -> None:
        fast.check_family(recipe)
        super().configure(recipe)

    def _fast(self, recipe: Recipe | None = None) -> bool:
        return fast.is_fast(recipe if recipe is not None else self.recipe)

    def build_model(self, recipe: Recipe | None = None) -> Any:
        if self._fast(recipe):
            return fast.build(recipe or self.recipe, self.num_classes)  # type: ignore[arg-type]
        width = float((recipe or PRESETS["dawnbench"]).extra.get("width", 1.0))
        return build_resnet9(width, self.num_classes)

    def model_name(self, recipe: Recipe) -> str:
        if self._fast(recipe):
            return fast.model_name(recipe)
        return f"ResNet-9 style, width x{recipe.extra.get('width', 1.0)}"

    # -- training: the fast family overrides optimizer, loss, step and the epoch hooks ------

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        if self._fast(recipe):
            return fast.make_optimizer(model, recipe, steps_per_epoch)
        return super().make_optimizer(model, recipe, steps_per_epoch)

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        if self._fast(recipe):
            return fast_loss(logits, target, recipe.label_smoothing)
        return super().loss(logits, target, recipe)

    def train_step(self, state: TrainState, batch: Batch, phase: Phase = no_phase) -> Any:
        """ResNet-9: the base step. Fast: the base step on the summed loss (the lr assumes
        it), then the Lookahead update; returns the mean per-example loss for the record."""
        if not self._fast(state.recipe):
            return super().train_step(state, batch, phase)
        if fast.wants_channels_last(state.recipe) and not state.channels_last:
            batch = Batch(
                tuple(x.contiguous(memory_format=_channels_last()) for x in batch.inputs),
                batch.target,
                batch.size,
            )
        loss = super().train_step(state, batch, phase)
        fast.after_step(state, phase)
        return loss / batch.size

    def on_epoch_start(self, state: TrainState, data: Any, epoch: int) -> None:
        if self._fast(state.recipe):
            fast.on_epoch_start(state, data, epoch)

    def on_epoch_end(self, state: TrainState, data: Any, epoch: int) -> None:
        if self._fast(state.recipe):
            fast.on_epoch_end(state, data, epoch)

    def _streaming(self, data_dir: str | None, device: Any, limit: int) -> Any:
        """`--switch data=workers`: JPEG/PNG folders decoded by DataLoader worker processes
        each epoch (pinned memory on CUDA), with the loader's CIFAR augmentation (reflect-pad 4,
        random crop, flip) instead of the recipe's on-device augmentation."""
        from pathlib import Path

        from perfsuite.workloads.cifar10.data import CLASSES
        from perfsuite.workloads.imagefolder import ImageFolderSource
        from perfsuite.workloads.transforms import cifar_transforms

        root = Path(data_dir or "")
        if not data_dir or not (root / "train").is_dir():
            raise ValueError(
                f"--switch data=workers needs CIFAR-10 in image-folder layout under --data-dir "
                f"({root / 'train'}/<class>/*.jpg|png): not found"
            )
        source = ImageFolderSource(
            root,
            *cifar_transforms(MEAN, STD),
            device=device,
            classes=list(CLASSES),
            train_limit=limit or None,
        )
        source.description += "; loader augmentation: reflect-pad 4, random crop 32, flip"
        return source

    def load_data(self, data_dir: str | None, device: Any) -> InMemorySource:
        """All of CIFAR-10, or with recipe `train_limit` N the first N/10 training images of
        each class (a balanced subset for quick checks; the record flags it)."""
        import numpy as np
        import torch
        import torch.nn.functional as F

        from perfsuite.workloads.cifar10.data import balanced_subset, find_cifar10

        limit = int((self.recipe.extra if self.recipe else {}).get("train_limit", 0) or 0)
        if (self.recipe.extra if self.recipe else {}).get("data") == "workers":
            return self._streaming(data_dir, device, limit)
        arrays, where = find_cifar10(data_dir, download=self.download)

        def prep(images: np.ndarray, labels: np.ndarray, per_class: int) -> tuple[Any, Any]:
            images, labels = balanced_subset(images, labels, per_class)
            x = torch.from_numpy(images).permute(0, 3, 1, 2).float()
            x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
            return x.contiguous().to(device), torch.from_numpy(labels).to(device)

        train_x, train_y = prep(*arrays["train"], max(1, limit // 10) if limit else 0)
        test_x, test_y = prep(*arrays["test"], 0)
        if limit:
            where += f" (training subset: {len(train_y)} images)"
        if self._fast():
            ex = self.recipe.extra  # type: ignore[union-attr]
            # Unpadded: random_translate pads by its own amount per batch.
            return fast.FastCifarSource(
                train_x,
                train_y,
                test_x,
                test_y,
                description=where,
                translate=int(ex.get("translate", 2)),
                flip=str(ex.get("flip", "alternating")),
            )
        # Random crops are cut from a reflect-padded copy made once: one-off work belongs to
        # setup, not to the first epoch.
        padded = F.pad(train_x, (4, 4, 4, 4), mode="reflect")
        return InMemorySource(padded, train_y, test_x, test_y, description=where, augment=augment)

    def predict(self, model: Any, *inputs: Any) -> Any:
        (x,) = inputs
        if self._fast():
            return fast.predict(model, x, self.recipe)
        logits = model(x)
        tta = self.recipe is None or bool(self.recipe.extra.get("tta_flip", True))
        return logits + model(x.flip(3)) if tta else logits


def augment(padded: Any, generator: Any, size: int = 32) -> Any:
    """Per-example random crop from a reflect-padded batch, then random horizontal flip."""
    import torch

    b, c, h, w = padded.shape
    dev = padded.device
    dy = torch.randint(0, h - size + 1, (b,), generator=generator).to(dev)
    dx = torch.randint(0, w - size + 1, (b,), generator=generator).to(dev)
    ar = torch.arange(size, device=dev)
    rows = (dy[:, None] + ar)[:, None, :, None]
    cols = (dx[:, None] + ar)[:, None, None, :]
    bi = torch.arange(b, device=dev)[:, None, None, None]
    ci = torch.arange(c, device=dev)[None, :, None, None]
    out = padded[bi, ci, rows, cols]
    flip = (torch.rand(b, generator=generator) < 0.5).to(dev)[:, None, None, None]
    return torch.where(flip, out.flip(3), out)


def _channels_last() -> Any:
    import torch

    return torch.channels_last
