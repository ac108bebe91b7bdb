"""The DAWNBench-style ResNet-9 family of the cifar10 workload.

Recipe of the DAWNBench-winner family, designed here: a ResNet-9-style network (conv-BN-ReLU
blocks, max-pool downsampling, two residual blocks, global max-pool, scaled linear head),
one-cycle learning rate, label smoothing, Nesterov SGD, random crop (reflect-pad 4) + horizontal
flip augmentation on the device, and test-time flip averaging. Presets: `dawnbench` (full width,
24 epochs, aimed at 94% on a GPU) and `cpu` (quarter width, 8 epochs, for lower CPU-feasible
thresholds such as 80%). The optimizer, loss and step are the base workload's.
"""

from __future__ import annotations

import copy
from typing import Any

from perfsuite.workloads.base import Recipe
from perfsuite.workloads.cifar10.task import Cifar10Task, check_muon_flag
from perfsuite.workloads.data import InMemorySource


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


class ResNet9Workload(Cifar10Task):
    """cifar10 with the ResNet-9 recipes (`dawnbench`, `cpu`)."""

    def presets(self) -> dict[str, Recipe]:
        return dict(PRESETS)

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return copy.deepcopy(PRESETS["cpu" if str(device).startswith("cpu") else "dawnbench"])

    def configure(self, recipe: Recipe) -> None:
        check_muon_flag(recipe)
        for key, default in (("muon", False), ("activation", "gelu")):
            if recipe.extra.get(key, default) != default:
                raise ValueError(
                    f"recipe field {key!r}: {recipe.extra[key]} needs the fast family "
                    "(--recipe airbench or airbench_muon)"
                )
        super().configure(recipe)

    def build_model(self, recipe: Recipe | None = None) -> Any:
        width = float((recipe or PRESETS["dawnbench"]).extra.get("width", 1.0))
        return build_resnet9(width, self.num_classes)

    def model_name(self, recipe: Recipe) -> str:
        return f"ResNet-9 style, width x{recipe.extra.get('width', 1.0)}"

    def in_memory_source(
        self, train_x: Any, train_y: Any, test_x: Any, test_y: Any, description: str
    ) -> InMemorySource:
        """Random crops are cut from a reflect-padded copy made once: one-off work belongs to
        setup, not to the first epoch."""
        import torch.nn.functional as F

        padded = F.pad(train_x, (4, 4, 4, 4), mode="reflect")
        return InMemorySource(
            padded, train_y, test_x, test_y, description=description, augment=augment
        )

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
