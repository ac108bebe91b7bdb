"""ImageNet ResNet-18 and ResNet-50, written for this project with the same architecture as
torchvision's (stride in the 3x3 conv of a bottleneck, "v1.5"), so FLOP counts compare.

Stem: 7x7/2 conv 64, BN, ReLU, 3x3/2 max-pool; four stages of 64/128/256/512 base channels
(stride 2 from stage 2 on, projection shortcut = 1x1 conv + BN where shape changes); global
average pool; fully connected layer.
"""

from __future__ import annotations

from torch import Tensor, nn


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout)]


class BasicBlock(nn.Module):
    """Two 3x3 convs; used by ResNet-18/34."""

    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1, self.bn1 = _conv_bn(cin, width, 3, stride)
        self.conv2, self.bn2 = _conv_bn(width, width, 3)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(cin, width, stride)

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carries the stride), 1x1 expand x4; used by ResNet-50/101/152."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.conv1, self.bn1 = _conv_bn(cin, width, 1)
        self.conv2, self.bn2 = _conv_bn(width, width, 3, stride)
        self.conv3, self.bn3 = _conv_bn(width, cout, 1)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _shortcut(cin, cout, stride)

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + self.downsample(x))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(*_conv_bn(cin, cout, 1, stride))


class ResNet(nn.Module):
    def __init__(self, block: type, layers: list[int], num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1, self.bn1 = _conv_bn(3, 64, 7, 2)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        stages = []
        for i, (width, blocks) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
            stage = []
            for j in range(blocks):
                stride = 2 if (i > 0 and j == 0) else 1
                stage.append(block(cin, width, stride))
                cin = width * block.expansion
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet18(num_classes: int = 1000) -> ResNet:
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes)


def resnet50(num_classes: int = 1000) -> ResNet:
    return ResNet(Bottleneck, [3, 4, 6, 3], num_classes)
