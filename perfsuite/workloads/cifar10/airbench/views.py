"""View transforms of the airbench family: the training augmentation (alternating flip,
random translate) and test-time augmentation; written from the airbench paper (arXiv
2404.00498).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# ----------------------------------------------------------------------------------------------
# Test-time augmentation
# ----------------------------------------------------------------------------------------------

TTA_FORWARDS = {0: 1, 1: 2, 2: 6}


def tta_logits(model: nn.Module, x: torch.Tensor, level: int) -> torch.Tensor:
    """Logits averaged over views: 0 the image (1 forward), 1 image and mirror (2), 2 those plus
    both views of the image shifted one pixel up-left and one pixel down-right with reflect
    padding (6); at level 2 the untranslated pair weighs 1/2 and each shifted pair 1/4, as in
    the paper (training translates by up to 2 pixels, so the shifted views are in-distribution).
    """
    if level not in TTA_FORWARDS:
        raise ValueError(f"tta level: expected 0, 1 or 2, got {level!r}")
    if level == 0:
        return model(x)

    def mirror(v: torch.Tensor) -> torch.Tensor:
        return 0.5 * (model(v) + model(v.flip(-1)))

    out = mirror(x)
    if level == 1:
        return out
    h, w = x.shape[-2:]
    padded = F.pad(x, (1, 1, 1, 1), mode="reflect")
    up_left = padded[..., 0:h, 0:w]
    down_right = padded[..., 2 : h + 2, 2 : w + 2]
    return 0.5 * out + 0.25 * (mirror(up_left) + mirror(down_right))


# ----------------------------------------------------------------------------------------------
# Training augmentation
# ----------------------------------------------------------------------------------------------


def alternating_flip(x: torch.Tensor, first_mask: torch.Tensor, epoch: int) -> torch.Tensor:
    """The paper's derandomized flip: image i is mirrored in epoch 0 where `first_mask[i]`
    (drawn once, p = 1/2) and in every later epoch exactly when it was not in the one before,
    so every pair of consecutive epochs shows both orientations (random flips repeat the same
    orientation half the time). `x` and `first_mask` are indexed by dataset position."""
    flip = first_mask if epoch % 2 == 0 else ~first_mask
    return torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)


def random_translate(
    x: torch.Tensor, pad: int, generator: torch.Generator | None, gather: bool | None = None
) -> torch.Tensor:
    """Shift each image by up to `pad` pixels in each direction (reflect padding).

    Two ways to the same pixels (the same draws, bit-identical output): on CPU a loop over the
    (2 pad + 1)^2 offsets with masks, cheaper there than a per-pixel gather; on a GPU
    (`gather` None means x.is_cuda) one gather, because each masked offset costs the host a
    sync (`any`, then the mask's nonzero), 50 a batch, and a GPU waiting on host syncs idles
    (docs/results/2026-11-26-counters-gpu.md)."""
    if pad <= 0:
        return x
    n, c, h, w = x.shape
    padded = F.pad(x, (pad,) * 4, mode="reflect")
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator).to(x.device)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator).to(x.device)
    if x.is_cuda if gather is None else gather:
        rows = (torch.arange(h, device=x.device) + dy[:, None])[:, None, :, None]
        cols = (torch.arange(w, device=x.device) + dx[:, None])[:, None, None, :]
        image = torch.arange(n, device=x.device)[:, None, None, None]
        channel = torch.arange(c, device=x.device)[None, :, None, None]
        return padded[image, channel, rows, cols]
    out = torch.empty_like(x)
    for oy in range(2 * pad + 1):
        for ox in range(2 * pad + 1):
            sel = (dy == oy) & (dx == ox)
            if bool(sel.any()):
                out[sel] = padded[sel, :, oy : oy + h, ox : ox + w]
    return out
