"""Glass blur and zoom blur, the two blurs of the CIFAR-10-C benchmark set that need more than
one filter: their family functions and the pieces the tests check. Same conventions as
corruptions.py (floats in [0, 1], batches (N, H, W, C), one Generator per image); the
definitions and every deviation from the paper's code are in docs/generalization.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perfsuite.generalization import corruption_ops as ops

Rngs = Sequence[np.random.Generator]


def glass_moves(shape: tuple[int, int], max_delta: int, g: np.random.Generator) -> np.ndarray:
    """One pass of the paper's local shuffle for an image of `shape` (H, W): the offsets
    (dy, dx), shape (2, rows, cols), drawn as its np.random.randint(-max_delta, max_delta)
    (so in [-max_delta, max_delta - 1]) for the pixels (h, w) it visits, h from H - max_delta
    down to max_delta + 1 and w likewise (rows and columns in that descending order)."""
    h, w = shape
    rows, cols = max(0, h - 2 * max_delta), max(0, w - 2 * max_delta)
    dxy = g.integers(-max_delta, max_delta, size=(rows, cols, 2))
    return np.stack([dxy[..., 1], dxy[..., 0]])  # the paper draws dx first, then dy


def glass_pass(x: np.ndarray, moves: Sequence[np.ndarray], max_delta: int) -> np.ndarray:
    """Apply one shuffle pass to each image of a batch (N, H, W, C), `moves` one per image.

    The paper writes the step as a swap, `x[h, w], x[h', w'] = x[h', w'], x[h, w]`, but on an
    (H, W, C) numpy array both right-hand sides are views, so the pixel at (h, w) receives
    its neighbour's value and the neighbour keeps its own (numpy/numpy#14428): a copy, which
    is what CIFAR-10-C contains and what is done here. With max_delta 1 (every CIFAR-10-C
    severity) the offsets are -1 or 0, so each source pixel is visited after its destination
    and is still unmodified when read: the sequential loop is exactly this one gather."""
    if max_delta != 1:
        raise ValueError(
            f"glass_pass: the gather equals the paper's loop only for max_delta 1, got {max_delta}"
        )
    h, w = x.shape[1:3]
    out = x.copy()
    if h <= 2 * max_delta or w <= 2 * max_delta:
        return out
    hs = np.arange(h - max_delta, max_delta, -1)[:, None]
    ws = np.arange(w - max_delta, max_delta, -1)[None, :]
    dy, dx = np.stack(moves).transpose(1, 0, 2, 3)  # each (N, rows, cols)
    batch = np.arange(len(x))[:, None, None]
    out[:, hs, ws] = x[batch, hs + dy, ws + dx]
    return out


def glass_blur(x: np.ndarray, c: tuple[float, int, int], rngs: Rngs) -> np.ndarray:
    """Blur (sigma), quantize to uint8 by truncation, shuffle `iterations` times, blur again."""
    sigma, max_delta, iterations = c
    u8 = np.floor(ops.gaussian_blur(x, sigma) * 255.0)  # np.uint8 of values in [0, 255]
    for _ in range(iterations):
        moves = [glass_moves(x.shape[1:3], max_delta, g) for g in rngs]
        u8 = glass_pass(u8, moves, max_delta)
    return ops.gaussian_blur(u8 / 255.0, sigma)


def zoom_factors(stop: float) -> np.ndarray:
    """The paper's zoom factors np.arange(1, stop, 0.01): floating-point steps, so
    stop 1.06 gives seven factors 1.00 .. 1.06, stop 1.16 sixteen, 1.00 .. 1.15."""
    return np.arange(1, stop, 0.01)


def zoom_blur(x: np.ndarray, stop: float, rngs: Rngs) -> np.ndarray:
    """Mean of the image and its clipped zooms by every factor (factor 1.00 included, so the
    image counts twice)."""
    factors = zoom_factors(stop)
    n, h, w, c = x.shape
    planes = x.transpose(1, 2, 0, 3).reshape(h, w, -1)  # one layout change for all zooms
    out = planes.copy()
    for f in factors:
        out += ops.zoom_planes(planes, float(f))
    out /= len(factors) + 1
    return out.reshape(h, w, n, c).transpose(2, 0, 1, 3)
