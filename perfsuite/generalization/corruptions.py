"""Common corruptions after Hendrycks & Dietterich (ICLR 2019, CIFAR-10-C / ImageNet-C),
generated here deterministically from a test set, with numpy and PIL only.

Every family takes a batch of images (N, H, W, C) as floats in [0, 1] (uint8 / 255, as the
paper's generator reads its PIL images) and a severity 1-5, and uses the paper's CIFAR-10-C
severity parameters. Randomness comes from one numpy Generator per image, seeded with
(seed, family id, severity, image index in the full test set): image i is corrupted the same
way whatever the batch, the subset or the order. The result is quantized to uint8 the way the
paper's saved arrays are (np.uint8 of the clipped float x 255, i.e. truncation). Formulas,
parameters and every deviation from the paper's code: docs/generalization.md.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfsuite.generalization import corruption_blur as blur
from perfsuite.generalization import corruption_ops as ops
from perfsuite.generalization import corruption_weather as weather

Rngs = Sequence[np.random.Generator]
Fn = Callable[[np.ndarray, Any, Rngs], np.ndarray]


@dataclass(frozen=True)
class Family:
    """One corruption: a stable id (part of the seed), the five severity parameters, and
    whether it needs colour (three channels)."""

    name: str
    ident: int
    params: tuple[Any, ...]
    fn: Fn
    needs_color: bool = False


def _gaussian_noise(x: np.ndarray, c: float, rngs: Rngs) -> np.ndarray:
    noise = np.stack([g.normal(scale=c, size=x.shape[1:]) for g in rngs])
    return x + noise


def _shot_noise(x: np.ndarray, c: float, rngs: Rngs) -> np.ndarray:
    return np.stack([g.poisson(img * c) / c for g, img in zip(rngs, x, strict=True)])


def _impulse_noise(x: np.ndarray, amount: float, rngs: Rngs) -> np.ndarray:
    out = x.copy()
    for k, g in enumerate(rngs):
        flipped = g.random(x.shape[1:]) <= amount
        salted = g.random(x.shape[1:]) <= 0.5
        out[k][flipped & salted] = 1.0
        out[k][flipped & ~salted] = 0.0
    return out


def _defocus_blur(x: np.ndarray, c: tuple[float, float], rngs: Rngs) -> np.ndarray:
    return ops.filter2d_reflect101(x, defocus_kernel(*c))


def defocus_kernel(radius: float, alias_blur: float) -> np.ndarray:
    """The paper's `disk`: a 17x17 disk of `radius` normalized to sum 1, then a 3x3 Gaussian
    blur (sigma `alias_blur`) to anti-alias it."""
    lim = max(8, math.ceil(radius))
    grid = np.arange(-lim, lim + 1, dtype=float)
    yy, xx = np.meshgrid(grid, grid, indexing="ij")
    disk = (xx**2 + yy**2 <= radius**2).astype(float)
    disk /= disk.sum()
    taps = ops.gaussian_taps(alias_blur, 1 if lim <= 8 else 2)
    return ops.separable_blur(disk[None, :, :, None], taps, "reflect")[0, :, :, 0]


def _motion_blur(x: np.ndarray, c: tuple[float, float], rngs: Rngs) -> np.ndarray:
    angles = np.array([g.uniform(-45, 45) for g in rngs])
    # 8-bit pixels as ImageMagick writes them; the paper keeps those as they are
    return np.round(ops.motion_blur(x, c[0], c[1], angles) * 255).astype(np.uint8)


def _gaussian_blur(x: np.ndarray, sigma: float, rngs: Rngs) -> np.ndarray:
    return ops.gaussian_blur(x, sigma)


def _contrast(x: np.ndarray, c: float, rngs: Rngs) -> np.ndarray:
    means = x.mean(axis=(1, 2), keepdims=True)
    return (x - means) * c + means


def _brightness(x: np.ndarray, c: float, rngs: Rngs) -> np.ndarray:
    if x.shape[-1] == 1:  # grey: saturation 0 and value = the pixel, so V + c is x + c
        return np.clip(x + c, 0, 1)
    hsv = ops.rgb_to_hsv(x)
    hsv[..., 2] = np.clip(hsv[..., 2] + c, 0, 1)
    return ops.hsv_to_rgb(hsv)


def _saturate(x: np.ndarray, c: tuple[float, float], rngs: Rngs) -> np.ndarray:
    hsv = ops.rgb_to_hsv(x)
    hsv[..., 1] = np.clip(hsv[..., 1] * c[0] + c[1], 0, 1)
    return ops.hsv_to_rgb(hsv)


def _fog(x: np.ndarray, c: tuple[float, float], rngs: Rngs) -> np.ndarray:
    _, h, w, _ = x.shape
    size = 1 << max(1, math.ceil(math.log2(max(h, w))))
    out = np.empty_like(x)
    for k, g in enumerate(rngs):
        top = x[k].max()
        layer = ops.plasma(size, c[1], g)[:h, :w, None]
        out[k] = (x[k] + c[0] * layer) * top / (top + c[0])
    return out


def _pil_each(x: np.ndarray, op: Callable[[Any], Any]) -> np.ndarray:
    """Apply a PIL operation to each image; returns uint8 (N, H, W, C)."""
    from PIL import Image

    u8 = np.round(x * 255).astype(np.uint8)
    out = []
    for img in u8:
        pil = Image.fromarray(img[..., 0] if img.shape[-1] == 1 else img)
        arr = np.asarray(op(pil), dtype=np.uint8)
        out.append(arr[..., None] if arr.ndim == 2 else arr)
    return np.stack(out)


def _pixelate(x: np.ndarray, c: float, rngs: Rngs) -> np.ndarray:
    from PIL import Image

    h, w = x.shape[1:3]

    def op(img: Any) -> Any:
        small = img.resize((max(1, int(w * c)), max(1, int(h * c))), Image.BOX)
        return small.resize((w, h), Image.BOX)

    return _pil_each(x, op)


def _jpeg(x: np.ndarray, quality: int, rngs: Rngs) -> np.ndarray:
    from PIL import Image

    def op(img: Any) -> Any:
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=quality)
        buf.seek(0)
        return Image.open(buf).convert(img.mode)

    return _pil_each(x, op)


def _elastic(x: np.ndarray, c: tuple[float, float, float], rngs: Rngs) -> np.ndarray:
    _, h, w, _ = x.shape
    size = min(h, w)
    alpha, sigma, affine = (f * size for f in c)
    out = np.empty_like(x)
    for k, g in enumerate(rngs):
        out[k] = elastic_one(x[k], alpha, sigma, affine, g)
    return out


def elastic_one(
    img: np.ndarray, alpha: float, sigma: float, affine: float, g: np.random.Generator
) -> np.ndarray:
    """One image: a random affine warp (three points moved by U(-affine, affine) pixels,
    bilinear, reflect-101 border), then a displacement field of Gaussian-smoothed
    U(-1, 1) noise (sigma, truncated at 3 sigma, symmetric border) times alpha, sampled
    bilinearly with a symmetric border."""
    h, w = img.shape[:2]
    centre = np.array([h // 2, w // 2], dtype=float)
    half = min(h, w) // 3
    src = np.array([centre + half, [centre[0] + half, centre[1] - half], centre - half])
    dst = src + g.uniform(-affine, affine, size=src.shape)
    basis = np.hstack([src, np.ones((3, 1))])
    m = np.linalg.solve(basis, dst).T  # 2x3, maps (x, y, 1) of src points to dst points
    inv = np.linalg.inv(m[:, :2])
    yy, xx = np.meshgrid(np.arange(h, dtype=float), np.arange(w, dtype=float), indexing="ij")
    px, py = xx - m[0, 2], yy - m[1, 2]
    sx = inv[0, 0] * px + inv[0, 1] * py
    sy = inv[1, 0] * px + inv[1, 1] * py
    warped = ops.bilinear(img, sy, sx, "reflect101")
    fields = []
    for _ in range(2):
        noise = g.uniform(-1, 1, size=(h, w))
        if sigma > 0:
            taps = ops.gaussian_taps(sigma, int(3.0 * sigma + 0.5))
            noise = ops.separable_blur(noise[None, :, :, None], taps, "symmetric")[0, :, :, 0]
        fields.append(noise * alpha)
    dx, dy = fields
    return ops.bilinear(warped, yy + dy, xx + dx, "symmetric")


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("gaussian_noise", 1, (0.04, 0.06, 0.08, 0.09, 0.10), _gaussian_noise),
        Family("shot_noise", 2, (500, 250, 100, 75, 50), _shot_noise),
        Family("impulse_noise", 3, (0.01, 0.02, 0.03, 0.05, 0.07), _impulse_noise),
        Family(
            "defocus_blur",
            4,
            ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),
            _defocus_blur,
        ),
        Family(
            "glass_blur",
            14,
            ((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)),
            blur.glass_blur,
        ),
        Family("motion_blur", 5, ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)), _motion_blur),
        Family("zoom_blur", 15, (1.06, 1.11, 1.16, 1.21, 1.26), blur.zoom_blur),
        Family("gaussian_blur", 6, (0.4, 0.6, 0.7, 0.8, 1.0), _gaussian_blur),
        Family("contrast", 7, (0.75, 0.5, 0.4, 0.3, 0.15), _contrast),
        Family("brightness", 8, (0.05, 0.1, 0.15, 0.2, 0.3), _brightness),
        Family(
            "saturate",
            9,
            ((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),
            _saturate,
            needs_color=True,
        ),
        Family(
            "snow",
            16,
            (
                (0.1, 0.2, 1, 0.6, 8, 3, 0.95),
                (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
                (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
                (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
                (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8),
            ),
            weather.snow,
        ),
        Family("fog", 10, ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)), _fog),
        Family("pixelate", 11, (0.95, 0.9, 0.85, 0.75, 0.65), _pixelate),
        Family("jpeg_compression", 12, (80, 65, 58, 50, 40), _jpeg),
        Family(
            "elastic_transform",
            13,
            (
                (0.0, 0.0, 0.08),
                (0.05, 0.2, 0.07),
                (0.08, 0.06, 0.06),
                (0.1, 0.04, 0.05),
                (0.1, 0.03, 0.03),
            ),
            _elastic,
        ),
    )
}


def image_rng(seed: int, family: str, severity: int, index: int) -> np.random.Generator:
    """The random stream of one corrupted image."""
    return np.random.default_rng([seed, FAMILIES[family].ident, severity, index])


def applicable(family: str, channels: int) -> str | None:
    """Why `family` cannot be applied to images with `channels` channels, else None."""
    if FAMILIES[family].needs_color and channels != 3:
        return f"needs colour images (3 channels), these have {channels}"
    return None


def corrupt(
    images: np.ndarray, family: str, severity: int, seed: int, indices: Sequence[int]
) -> np.ndarray:
    """Corrupted copies of uint8 images (N, H, W, C); `indices` are their positions in the
    full test set (they seed each image's stream)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown corruption {family!r}; known: {', '.join(FAMILIES)}")
    if not 1 <= severity <= 5:
        raise ValueError(f"severity must be 1-5, got {severity}")
    if images.dtype != np.uint8 or images.ndim != 4:
        raise ValueError("corrupt: images must be uint8 (N, H, W, C)")
    fam = FAMILIES[family]
    why = applicable(family, images.shape[-1])
    if why:
        raise ValueError(f"{family}: {why}")
    rngs = [image_rng(seed, family, severity, int(i)) for i in indices]
    out = fam.fn(images.astype(np.float64) / 255.0, fam.params[severity - 1], rngs)
    if out.dtype == np.uint8:
        return out
    return (np.clip(out, 0.0, 1.0) * 255.0).astype(np.uint8)
