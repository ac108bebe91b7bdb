"""CIFAR ResNet-20 / ResNet-56 (He et al. 2016, section 4.2), written for this project.

3x3 conv 16 on 32x32 input, then three stages of n basic blocks each (6n + 2 layers) with
16, 32 and 64 channels on 32x32, 16x16 and 8x8 maps, global average pool, 10-way linear.
Shortcuts are option A (as in the paper's CIFAR experiments): identity, and where the shape
changes, stride-2 subsampling with zero-padded extra channels - no parameters, no FLOPs.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class PadShortcut(nn.Module):
    """Option A: x[:, :, ::2, ::2], zero-padded from cin to cout channels."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.extra = cout - cin

    def forward(self, x: Tensor) -> Tensor:
        x = x[:, :, ::2, ::2]
        return F.pad(x, (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))


class CifarBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = PadShortcut(cin, cout) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, n: int, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks: list[nn.Module] = []
        cin = 16
        for i, cout in enumerate((16, 32, 64)):
            for j in range(n):
                blocks.append(CifarBlock(cin, cout, 2 if (i > 0 and j == 0) else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        x = self.blocks(F.relu(self.bn1(self.conv1(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def resnet20(num_classes: int = 10) -> CifarResNet:
    return CifarResNet(3, num_classes)


def resnet56(num_classes: int = 10) -> CifarResNet:
    return CifarResNet(9, num_classes)
