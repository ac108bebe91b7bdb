"""Image operations the spatial corruptions are built from, in numpy only (no OpenCV, scipy or
ImageMagick): border index maps, separable and small 2-D filters, bilinear sampling, the
colour-space round trip and the diamond-square plasma. Images are float arrays (H, W, C) or
batches (N, H, W, C) in [0, 1]. docs/generalization.md says which library behaviour each
one stands in for.
"""

from __future__ import annotations

import numpy as np


def reflect101(i: np.ndarray, n: int) -> np.ndarray:
    """Index map of OpenCV's BORDER_REFLECT_101 (numpy pad 'reflect'): ... 2 1 | 0 1 2 ..."""
    if n == 1:
        return np.zeros_like(i)
    period = 2 * (n - 1)
    i = np.mod(i, period)
    return np.where(i >= n, period - i, i)


def symmetric(i: np.ndarray, n: int) -> np.ndarray:
    """Index map of scipy.ndimage mode 'reflect' (numpy pad 'symmetric'): ... 1 0 | 0 1 ..."""
    period = 2 * n
    i = np.mod(i, period)
    return np.where(i >= n, period - 1 - i, i)


def gaussian_taps(sigma: float, radius: int) -> np.ndarray:
    """Normalized 1-D Gaussian weights at -radius..radius."""
    x = np.arange(-radius, radius + 1, dtype=float)
    w = np.exp(-0.5 * (x / sigma) ** 2)
    return w / w.sum()


def separable_blur(x: np.ndarray, taps: np.ndarray, mode: str) -> np.ndarray:
    """Correlate the two image axes of a batch (N, H, W, C) with `taps` (odd length).
    `mode` is a numpy pad mode ('edge', 'reflect', 'symmetric')."""
    r = len(taps) // 2
    out = x
    for axis in (1, 2):
        pad = [(0, 0)] * out.ndim
        pad[axis] = (r, r)
        padded = np.pad(out, pad, mode=mode)
        n = out.shape[axis]
        acc = np.zeros_like(out)
        for k, w in enumerate(taps):
            acc += w * np.take(padded, np.arange(k, k + n), axis=axis)
        out = acc
    return out


def filter2d_reflect101(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """OpenCV filter2D (correlation, anchor at the centre, BORDER_REFLECT_101) of a batch
    (N, H, W, C); zero kernel entries are skipped."""
    kh, kw = kernel.shape
    ry, rx = kh // 2, kw // 2
    padded = np.pad(x, [(0, 0), (ry, ry), (rx, rx), (0, 0)], mode="reflect")
    h, w = x.shape[1:3]
    out = np.zeros_like(x)
    for dy, dx in zip(*np.nonzero(kernel), strict=True):
        out += kernel[dy, dx] * padded[:, dy : dy + h, dx : dx + w]
    return out


def bilinear(image: np.ndarray, ys: np.ndarray, xs: np.ndarray, border: str) -> np.ndarray:
    """Sample an image (H, W, C) at float coordinates (arrays of one shape) with bilinear
    weights; neighbours outside the image come through `border` ('reflect101' or
    'symmetric')."""
    h, w = image.shape[:2]
    remap = reflect101 if border == "reflect101" else symmetric
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    fy, fx = (ys - y0)[..., None], (xs - x0)[..., None]
    ya, yb = remap(y0, h), remap(y0 + 1, h)
    xa, xb = remap(x0, w), remap(x0 + 1, w)
    top = image[ya, xa] * (1 - fx) + image[ya, xb] * fx
    bottom = image[yb, xa] * (1 - fx) + image[yb, xb] * fx
    return top * (1 - fy) + bottom * fy


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """RGB (..., 3) in [0, 1] to HSV, all channels in [0, 1] (scikit-image's convention:
    hue 0 and saturation 0 where undefined)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    delta = v - rgb.min(axis=-1)
    safe = np.where(delta > 0, delta, 1.0)
    s = np.where(v > 0, delta / np.where(v > 0, v, 1.0), 0.0)
    h = np.where(
        v == r, (g - b) / safe, np.where(v == g, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe)
    )
    h = np.where(delta > 0, (h / 6.0) % 1.0, 0.0)
    return np.stack([h, s, v], axis=-1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """Inverse of rgb_to_hsv."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    sector = np.floor(h * 6.0)
    f = h * 6.0 - sector
    sector = sector.astype(int) % 6
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = np.zeros((*h.shape, 3))
    for k, (rr, gg, bb) in enumerate(table):
        m = sector == k
        out[m, 0], out[m, 1], out[m, 2] = rr[m], gg[m], bb[m]
    return out


def plasma(size: int, decay: float, rng: np.random.Generator) -> np.ndarray:
    """Diamond-square height map (size a power of two) scaled to [0, 1]: the fog layer.
    As in the paper's generator, the map wraps around its edges, the random offset at each
    level is wibble * U(-wibble, wibble) with wibble starting at 100 and divided by `decay`
    per level."""
    if size < 2 or size & (size - 1):
        raise ValueError(f"plasma: size must be a power of two >= 2, got {size}")
    grid = np.zeros((size, size))
    step, wibble = size, 100.0

    def noisy_mean(total: np.ndarray) -> np.ndarray:
        return total / 4 + wibble * rng.uniform(-wibble, wibble, total.shape)

    while step >= 2:
        half = step // 2
        corners = grid[0:size:step, 0:size:step]
        total = corners + np.roll(corners, -1, axis=0)
        total = total + np.roll(total, -1, axis=1)
        grid[half:size:step, half:size:step] = noisy_mean(total)
        centres = grid[half:size:step, half:size:step]
        corners = grid[0:size:step, 0:size:step]
        across = centres + np.roll(centres, 1, axis=0) + corners + np.roll(corners, -1, axis=1)
        grid[0:size:step, half:size:step] = noisy_mean(across)
        down = centres + np.roll(centres, 1, axis=1) + corners + np.roll(corners, -1, axis=0)
        grid[half:size:step, 0:size:step] = noisy_mean(down)
        step //= 2
        wibble /= decay
    grid -= grid.min()
    top = grid.max()
    return grid / top if top > 0 else grid
