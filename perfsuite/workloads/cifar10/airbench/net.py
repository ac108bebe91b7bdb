"""The airbench network, after Keller Jordan's airbench (2024), and its patch whitening.

Written here from the paper "94% on CIFAR-10 in 3.29 seconds on a single GPU" (arXiv 2404.00498)
and the DAWNBench ResNet-9 line of work it extends; each piece small and tested:

- `build_fast_net`: a fixed 2x2 patch-whitening convolution, then three conv groups
  (conv, max-pool, BN, GELU, conv, BN, GELU), global max-pool and a scaled linear head;
  `net_from_recipe` builds it at a recipe's widths;
- `init_whitening`: the whitening layer's weights from the eigenvectors of the 2x2 patch
  covariance of training images.

The optimizer side is in optim.py (and muon.py), the augmentation views in views.py, the
presets in presets.py; nothing here imports the runner.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from perfsuite.workloads.base import Recipe

# ----------------------------------------------------------------------------------------------
# Network
# ----------------------------------------------------------------------------------------------


def whitening_width(kernel: int = 2, in_channels: int = 3) -> int:
    """Output channels of the whitening layer: every patch eigenvector and its negative, so that
    the GELU after it keeps both signs of each whitened direction (2 * 3 * 2 * 2 = 24)."""
    return 2 * in_channels * kernel * kernel


class ScaledHead(nn.Module):
    """Linear classifier without bias whose logits are multiplied by a fixed factor: small
    initial logits keep the early label-smoothed loss well conditioned (DAWNBench's 0.125,
    airbench's 1/9)."""

    def __init__(self, width: int, num_classes: int, scale: float) -> None:
        super().__init__()
        self.linear = nn.Linear(width, num_classes, bias=False)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale


def _batch_norm(channels: int, momentum: float, eps: float) -> nn.BatchNorm2d:
    """BN with its scale frozen at 1 and a learnable shift, as in the paper (and hlb-CIFAR10
    before it): fewer parameters to tune, and the shift trains at a 64x learning rate (see
    `make_fast_optimizer`)."""
    bn = nn.BatchNorm2d(channels, momentum=momentum, eps=eps)
    bn.weight.requires_grad_(False)
    return bn


def _conv3(cin: int, cout: int, dirac: bool) -> nn.Conv2d:
    """3x3 'same' conv without bias (BN follows). With `dirac`, the first min(cin, cout)
    filters start as identities, so every group starts as a near pass-through: the paper's
    partial identity initialization, a residual path without residual connections."""
    conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
    if dirac:
        with torch.no_grad():
            n = min(cin, cout)
            nn.init.dirac_(conv.weight[:n, :n])
    return conv


ACTIVATIONS = {"gelu": nn.GELU, "silu": nn.SiLU}


class ConvGroup(nn.Module):
    """conv -> max-pool 2 -> BN -> act -> conv -> BN -> act (act: GELU in the paper, SiLU in
    the 2025 record). Pooling right after the first conv makes the second conv (and both BNs)
    run at a quarter of the pixels."""

    def __init__(
        self,
        cin: int,
        cout: int,
        bn_momentum: float,
        bn_eps: float,
        dirac: bool,
        activation: str = "gelu",
    ):
        super().__init__()
        self.conv1 = _conv3(cin, cout, dirac)
        self.pool = nn.MaxPool2d(2)
        self.norm1 = _batch_norm(cout, bn_momentum, bn_eps)
        self.conv2 = _conv3(cout, cout, dirac)
        self.norm2 = _batch_norm(cout, bn_momentum, bn_eps)
        self.act = ACTIVATIONS[activation]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.norm1(self.pool(self.conv1(x))))
        return self.act(self.norm2(self.conv2(x)))


class FastNet(nn.Module):
    """whiten (fixed 2x2 conv, trainable bias) -> GELU -> 3 conv groups -> global max -> head."""

    def __init__(
        self,
        widths: tuple[int, int, int],
        *,
        whiten_kernel: int,
        bn_momentum: float,
        bn_eps: float,
        head_scale: float,
        num_classes: int,
        dirac: bool,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        first = whitening_width(whiten_kernel)
        self.whiten = nn.Conv2d(3, first, whiten_kernel, padding=0, bias=True)
        self.whiten.weight.requires_grad_(False)  # set by init_whitening, never trained
        with torch.no_grad():
            self.whiten.bias.zero_()
        self.act = nn.GELU()
        chans = (first, *widths)
        self.groups = nn.Sequential(
            *(
                ConvGroup(chans[i], chans[i + 1], bn_momentum, bn_eps, dirac, activation)
                for i in range(len(widths))
            )
        )
        self.pool = nn.AdaptiveMaxPool2d(1)
        self.head = ScaledHead(widths[-1], num_classes, head_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.groups(self.act(self.whiten(x)))
        return self.head(torch.flatten(self.pool(x), 1))


def build_fast_net(
    widths: tuple[int, ...] = (64, 256, 256),
    *,
    whiten_kernel: int = 2,
    bn_momentum: float = 0.4,
    bn_eps: float = 1e-12,
    head_scale: float = 1 / 9,
    num_classes: int = 10,
    dirac: bool = True,
    activation: str = "gelu",
) -> FastNet:
    """The airbench94 network. `widths` are the three conv groups (paper: 64, 256, 256; the
    DAWNBench ResNet-9 had 128/256/512 with residual blocks and twice the FLOPs). The first
    layer's width is fixed by the whitening (24 for 2x2 patches of RGB).

    `bn_momentum` is PyTorch's (weight of the new batch): 0.4, i.e. running statistics that
    forget fast, which Lookahead needs because it keeps pulling the weights back in time.
    `bn_eps` is tiny because the frozen BN scale makes eps only a guard against 0/0.
    Call `init_whitening` on `net.whiten` before training.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"recipe field 'activation': expected {' or '.join(ACTIVATIONS)}, got {activation!r}"
        )
    if len(widths) != 3 or any(int(w) < 1 for w in widths):
        raise ValueError(f"widths: expected three positive conv-group widths, got {widths!r}")
    w = (int(widths[0]), int(widths[1]), int(widths[2]))
    return FastNet(
        w,
        whiten_kernel=whiten_kernel,
        bn_momentum=bn_momentum,
        bn_eps=bn_eps,
        head_scale=head_scale,
        num_classes=num_classes,
        dirac=dirac,
        activation=activation,
    )


def parse_widths(text: str) -> tuple[int, int, int]:
    """'64,256,256' -> (64, 256, 256); recipes keep widths as text so `--set` can change them."""
    try:
        parts = tuple(int(p) for p in str(text).replace("-", ",").split(","))
    except ValueError:
        raise ValueError(f"recipe field 'widths': cannot read {text!r} as a,b,c") from None
    if len(parts) != 3 or min(parts) < 1:
        raise ValueError(f"recipe field 'widths': expected three positive integers, got {text!r}")
    return parts  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------
# Patch-whitening initialization
# ----------------------------------------------------------------------------------------------


def patch_moments(
    images: torch.Tensor, kernel: int, chunk: int = 512
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Mean (D,) and covariance (D, D) of all kernel x kernel patches (D = C*k*k, laid out as a
    conv weight is: channel, row, column), accumulated in float64 over image chunks so that
    5,000 images never materialize their 4.8 M patches at once. The sums stay on the images'
    device and only the (D, D) result comes to the CPU (for eigh), so a GPU recipe copies no
    patches to the host: that copy costs a large share of a sub-second first epoch
    (docs/results/2026-11-26-capture-parity-gpu.md)."""
    if images.ndim != 4:
        raise ValueError(f"images: expected N x C x H x W, got shape {tuple(images.shape)}")
    d = images.shape[1] * kernel * kernel
    s1 = torch.zeros(d, dtype=torch.float64, device=images.device)
    s2 = torch.zeros(d, d, dtype=torch.float64, device=images.device)
    n = 0
    for part in images.split(chunk):
        p = F.unfold(part.float().contiguous(), kernel)  # (B, D, L)
        p = p.transpose(1, 2).reshape(-1, d).to(torch.float64)
        s1 += p.sum(0)
        s2 += p.T @ p
        n += p.shape[0]
    if n < 2:
        raise ValueError("images: need at least two patches to estimate a covariance")
    mean = s1.cpu() / n
    cov = (s2.cpu() - n * torch.outer(mean, mean)) / (n - 1)
    return mean, cov, n


def init_whitening(conv: nn.Conv2d, images: torch.Tensor, eps: float = 5e-4) -> torch.Tensor:
    """Set `conv` (C -> 2*C*k*k channels, k x k, no padding) to whiten k x k patches.

    The patch covariance is eigen-decomposed, S = V diag(lam) V^T; filter i (largest eigenvalue
    first) is v_i / sqrt(lam_i + eps) and filter i + D is its negative. The bias is set to
    -W mu so outputs start at zero mean; with it, the first D outputs have covariance
    diag(lam / (lam + eps)), the identity up to eps. (The paper uses the uncentered second
    moment and a zero bias; on normalized images the mean is ~0 and the two agree.)
    Why: the first layer then starts where a trained one ends up (decorrelated edges and
    colours), so no epochs are spent learning it, and it need not be trained at all.
    Returns the eigenvalues, largest first.
    """
    k = conv.kernel_size[0]
    d = conv.in_channels * k * k
    if conv.kernel_size != (k, k) or conv.out_channels != 2 * d or conv.groups != 1:
        raise ValueError(
            f"conv: expected {conv.in_channels}->{2 * d} channels with a square kernel, got "
            f"{conv.in_channels}->{conv.out_channels} kernel {conv.kernel_size}"
        )
    if images.shape[1] != conv.in_channels:
        raise ValueError(f"images: expected {conv.in_channels} channels, got {images.shape[1]}")
    mean, cov, _ = patch_moments(images, k)
    lam, vec = torch.linalg.eigh(cov)  # ascending
    lam, vec = lam.flip(0).clamp_min(0.0), vec.flip(1)
    filters = (vec / torch.sqrt(lam + eps)).T  # (D, D): row i is filter i
    weight = torch.cat([filters, -filters]).reshape(2 * d, conv.in_channels, k, k)
    with torch.no_grad():
        conv.weight.copy_(weight.to(conv.weight.dtype))
        if conv.bias is not None:
            conv.bias.copy_((-(weight.reshape(2 * d, d) @ mean)).to(conv.bias.dtype))
    return lam.float()


def set_whitening_bias_trainable(model: FastNet, trainable: bool) -> None:
    """The paper trains the whitening bias for the first 3 epochs, then freezes it: afterwards
    backward can stop at the first conv group, saving the backward of the first GELU at full
    resolution. Needs `zero_grad(set_to_none=True)` so a stale gradient is not applied."""
    model.whiten.bias.requires_grad_(trainable)
    if not trainable:
        model.whiten.bias.grad = None


def net_from_recipe(recipe: Recipe, num_classes: int = 10) -> FastNet:
    """`build_fast_net` with a recipe's `widths` (each times `width`, the same multiplier the
    ResNet-9 recipes have, at least 8), `bn_momentum`, `bn_eps` and `head_scale`."""
    ex = recipe.extra
    return build_fast_net(
        scaled_widths(recipe),
        bn_momentum=float(ex.get("bn_momentum", 0.4)),
        bn_eps=float(ex.get("bn_eps", 1e-12)),
        head_scale=float(ex.get("head_scale", 1 / 9)),
        num_classes=num_classes,
        activation=str(ex.get("activation", "gelu")),
    )


def scaled_widths(recipe: Recipe) -> tuple[int, int, int]:
    scale = float(recipe.extra.get("width", 1.0))
    if scale <= 0:
        raise ValueError(f"recipe field 'width': expected a positive multiplier, got {scale}")
    a, b, c = (
        max(8, round(w * scale)) for w in parse_widths(recipe.extra.get("widths", "64,256,256"))
    )
    return a, b, c
