"""`cifar10`: the DAWNBench task (94% top-1 on the 10,000 test images).

Recipe of the DAWNBench-winner family, designed here: a ResNet-9-style network (conv-BN-ReLU
blocks, max-pool downsampling, two residual blocks, global max-pool, scaled linear head),
one-cycle learning rate, label smoothing, Nesterov SGD, random crop (reflect-pad 4) + horizontal
flip augmentation on the device, and test-time flip averaging. Presets: `dawnbench` (full width,
24 epochs, aimed at 94% on a GPU) and `cpu` (quarter width, 8 epochs, for lower CPU-feasible
thresholds such as 80%); the default follows the device.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.data import InMemorySource
from perfsuite.workloads.switches import COMMON

# Per-channel statistics of the CIFAR-10 training set (0-255 scale).
MEAN = (125.31, 122.95, 113.87)
STD = (62.99, 62.09, 66.70)


def build_resnet9(width: float = 1.0, num_classes: int = 10, head_scale: float = 0.125) -> Any:
    from torch import nn

    c = [max(8, round(w * width)) for w in (64, 128, 256, 512)]

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
    switches = COMMON | {"label_smoothing", "tta"}

    def __init__(self) -> None:
        self.download = False

    def presets(self) -> dict[str, Recipe]:
        return PRESETS

    def default_recipe(self, device: str = "cpu") -> Recipe:
        import copy

        return copy.deepcopy(PRESETS["cpu" if str(device).startswith("cpu") else "dawnbench"])

    def build_model(self, recipe: Recipe | None = None) -> Any:
        width = float((recipe or PRESETS["dawnbench"]).extra.get("width", 1.0))
        return build_resnet9(width, self.num_classes)

    def model_name(self, recipe: Recipe) -> str:
        return f"ResNet-9 style, width x{recipe.extra.get('width', 1.0)}"

    def load_data(self, data_dir: str | None, device: Any) -> InMemorySource:
        """All of CIFAR-10, or with recipe `train_limit` N the first N/10 training images of
        each class (a balanced subset for quick checks; the record flags it)."""
        import numpy as np
        import torch
        import torch.nn.functional as F

        from perfsuite.workloads.cifar_data import find_cifar10

        arrays, where = find_cifar10(data_dir, download=self.download)
        limit = int((self.recipe.extra if self.recipe else {}).get("train_limit", 0) or 0)

        def prep(images: np.ndarray, labels: np.ndarray, per_class: int) -> tuple[Any, Any]:
            if per_class:
                keep = np.sort(
                    np.concatenate([np.flatnonzero(labels == c)[:per_class] for c in range(10)])
                )
                images, labels = images[keep], labels[keep]
            x = torch.from_numpy(images).permute(0, 3, 1, 2).float()
            x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
            return x.contiguous().to(device), torch.from_numpy(labels).to(device)

        train_x, train_y = prep(*arrays["train"], max(1, limit // 10) if limit else 0)
        test_x, test_y = prep(*arrays["test"], 0)
        if limit:
            where += f" (training subset: {len(train_y)} images)"
        # Random crops are cut from a reflect-padded copy made once: one-off work belongs to
        # setup, not to the first epoch.
        padded = F.pad(train_x, (4, 4, 4, 4), mode="reflect")
        return InMemorySource(padded, train_y, test_x, test_y, description=where, augment=augment)

    def predict(self, model: Any, *inputs: Any) -> Any:
        (x,) = inputs
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
