"""Snow, the weather corruption of the CIFAR-10-C benchmark set that can be made here (frost
needs the paper's frost photographs): its family function and the pieces the tests check.
Same conventions as corruptions.py; definitions and deviations: docs/generalization.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perfsuite.generalization import corruption_ops as ops

Rngs = Sequence[np.random.Generator]
Snow = tuple[float, float, float, float, float, float, float]

# ITU-R 601 luma, OpenCV's COLOR_RGB2GRAY
_LUMA = np.array([0.299, 0.587, 0.114])


def snow_flakes(shape: tuple[int, int], c: Snow, rngs: Rngs) -> np.ndarray:
    """The flake layers (N, H, W, 1) before the streaks, one per Generator: N(c0, c1) per
    pixel, zoomed by c2 about the centre (clipped zoom), values below c3 set to 0, clipped
    to [0, 1] and truncated to 8 bits (the grey PNG the paper hands to ImageMagick), as
    floats k / 255."""
    layers = np.stack([g.normal(loc=c[0], scale=c[1], size=shape) for g in rngs])
    layers = ops.clipped_zoom(layers[..., None], c[2])
    layers[layers < c[3]] = 0.0
    return np.floor(np.clip(layers, 0.0, 1.0) * 255.0) / 255.0


def snow_background(x: np.ndarray, blend: float) -> np.ndarray:
    """blend x + (1 - blend) max(x, 1.5 grey(x) + 0.5): the images washed towards white.
    grey is the luma of a colour image, the image itself when it has one channel."""
    grey = x @ _LUMA if x.shape[-1] == 3 else x[..., 0]
    return blend * x + (1.0 - blend) * np.maximum(x, grey[..., None] * 1.5 + 0.5)


def snow(x: np.ndarray, c: Snow, rngs: Rngs) -> np.ndarray:
    """Flakes streaked by ImageMagick's motion blur (radius c4, sigma c5, angle
    U(-135, -45) degrees per image, drawn after its flakes), added to the washed images
    once as they are and once rotated by 180 degrees."""
    flakes = snow_flakes(x.shape[1:3], c, rngs)
    angles = np.array([g.uniform(-135, -45) for g in rngs])
    streaks = ops.motion_blur(flakes, c[4], c[5], angles)
    return snow_background(x, c[6]) + streaks + streaks[:, ::-1, ::-1]
