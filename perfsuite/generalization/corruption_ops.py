"""Image operations the spatial corruptions are built from, in numpy only (no OpenCV, scipy or
ImageMagick): border index maps, separable and small 2-D filters, bilinear sampling, the
colour-space round trip, the diamond-square plasma, scipy's bilinear zoom and ImageMagick's
motion blur. Images are float arrays (H, W, C) or
batches (N, H, W, C) in [0, 1]. docs/generalization.md says which library behaviour each
one stands in for.
"""

from __future__ import annotations

import math

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
        window = [slice(None)] * out.ndim
        acc = np.zeros_like(out)
        for k, w in enumerate(taps):
            window[axis] = slice(k, k + n)
            acc += w * padded[tuple(window)]
        out = acc
    return out


def gaussian_blur(x: np.ndarray, sigma: float) -> np.ndarray:
    """scikit-image's `gaussian` on a batch (N, H, W, C): separable, truncated at 4 sigma
    (radius int(4 sigma + 0.5), so sigma < 0.125 is the identity), edge pixels repeated."""
    return separable_blur(x, gaussian_taps(sigma, int(4.0 * sigma + 0.5)), "edge")


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


def zoom_matrix(n: int, factor: float) -> np.ndarray:
    """The paper's `clipped_zoom` along one axis of length n as an (n, n) matrix: crop the
    centre ceil(n / factor) pixels, zoom them with scipy.ndimage.zoom(order=1) (output
    length round(crop x factor); output pixel o reads input coordinate
    o (crop - 1) / (out - 1), linearly interpolated), and keep the centre n pixels."""
    crop = math.ceil(n / factor)
    top = (n - crop) // 2
    out = round(crop * factor)  # Python's round, as scipy's zoom
    trim = (out - n) // 2
    scale = (crop - 1) / (out - 1) if out > 1 else 1.0
    src = np.arange(trim, trim + n) * scale
    lo = np.minimum(np.floor(src).astype(int), crop - 1)
    frac = src - lo
    hi = np.minimum(lo + 1, crop - 1)
    m = np.zeros((n, n))
    rows = np.arange(n)
    np.add.at(m, (rows, top + lo), 1.0 - frac)
    np.add.at(m, (rows, top + hi), frac)
    return m


def zoom_planes(planes: np.ndarray, factor: float) -> np.ndarray:
    """The paper's `clipped_zoom` by `factor` of planes stacked as (H, W, K), K = images x
    channels: one matrix product per axis for all of them (per axis, so non-square images
    work too)."""
    h, w = planes.shape[:2]
    rows = (zoom_matrix(h, factor) @ planes.reshape(h, -1)).reshape(planes.shape)
    return np.matmul(zoom_matrix(w, factor), rows)  # (W, W) @ (W, K) for each row


def clipped_zoom(x: np.ndarray, factor: float) -> np.ndarray:
    """`zoom_planes` of a batch (N, H, W, C), keeping its layout."""
    planes = x.transpose(1, 2, 0, 3).reshape(*x.shape[1:3], -1)
    n, h, w, c = x.shape
    return zoom_planes(planes, factor).reshape(h, w, n, c).transpose(2, 0, 1, 3)


def motion_taps(
    radius: float, sigma: float, angles_deg: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ImageMagick's MotionBlurImage kernel: 2*ceil(radius)+1 one-sided Gaussian weights
    exp(-i^2 / 2 sigma^2) (normalized), tap i at the rounded offset (row, column) =
    (ceil(i sin a - 0.5), ceil(i cos a - 0.5)). Returns the weights (T,) and the row and
    column offsets (N, T) for N angles."""
    i = np.arange(2 * math.ceil(radius) + 1)
    weights = np.exp(-(i**2) / (2.0 * sigma * sigma))
    a = np.radians(np.asarray(angles_deg, dtype=float))[:, None]
    dy = np.ceil(i * np.sin(a) - 0.5).astype(int)
    dx = np.ceil(i * np.cos(a) - 0.5).astype(int)
    return weights / weights.sum(), dy, dx


def motion_blur(x: np.ndarray, radius: float, sigma: float, angles: np.ndarray) -> np.ndarray:
    """ImageMagick's MotionBlurImage of each image of a batch (N, H, W, C) at its own angle
    (degrees), edge pixels repeated (its default virtual pixels), written to 8 bits the way
    ImageMagick 6 Q16 does: the sum rounded to a 16-bit quantum, then truncated to 8 bits
    (pixel-exact against `convert -motion-blur`, docs/generalization.md). Returns floats
    k / 255."""
    n, h, w, c = x.shape
    weights, dys, dxs = motion_taps(radius, sigma, angles)
    flat = x.reshape(n * h * w, c)
    base = (np.arange(n) * h * w)[:, None, None]
    rows, cols = np.arange(h), np.arange(w)
    out = np.zeros_like(x)
    for i, wt in enumerate(weights):  # same weight for every image, offsets per image
        ys = np.clip(rows + dys[:, i : i + 1], 0, h - 1)[:, :, None]
        xs = np.clip(cols + dxs[:, i : i + 1], 0, w - 1)[:, None, :]
        out += wt * flat[base + ys * w + xs]
    q16 = np.floor(np.clip(out, 0.0, 1.0) * 65535.0 + 0.5)
    return np.floor(q16 / 257.0) / 255.0
