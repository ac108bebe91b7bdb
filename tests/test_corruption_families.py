"""The CIFAR-10-C families glass_blur, zoom_blur and snow: the family list, their severity
parameters against hendrycks/robustness ImageNet-C/create_c/make_cifar_c.py (commit 8190fe3),
and each definition on tiny images."""

from __future__ import annotations

import numpy as np
import pytest

from perfsuite.generalization import corruption_blur as B
from perfsuite.generalization import corruption_ops as ops
from perfsuite.generalization import corruption_weather as W
from perfsuite.generalization import corruptions as C

PAPER_MAIN = [  # the paper's 15 benchmark corruptions; frost needs its photographs
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur",
    "motion_blur", "zoom_blur", "snow", "fog", "brightness", "contrast",
    "elastic_transform", "pixelate", "jpeg_compression",
]  # fmt: skip


def _random(n=1, size=8, channels=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, channels), np.uint8)


def test_family_list_and_stable_ids():
    assert set(PAPER_MAIN) | {"gaussian_blur", "saturate"} == set(C.FAMILIES)
    assert "frost" not in C.FAMILIES
    ids = {name: f.ident for name, f in C.FAMILIES.items()}
    assert sorted(ids.values()) == list(range(1, 17))
    assert (ids["glass_blur"], ids["zoom_blur"], ids["snow"]) == (14, 15, 16)


def test_severity_parameters_are_the_cifar10c_scripts():
    assert C.FAMILIES["glass_blur"].params == (
        (0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2),
    )  # fmt: skip
    assert C.FAMILIES["snow"].params == (
        (0.1, 0.2, 1, 0.6, 8, 3, 0.95),
        (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
        (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
        (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
        (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8),
    )
    # np.arange(1, stop, 0.01) with stop 1.06, 1.11, 1.16, 1.21, 1.26: floating-point steps
    factors = [B.zoom_factors(stop) for stop in C.FAMILIES["zoom_blur"].params]
    assert [len(f) for f in factors] == [7, 12, 16, 21, 26]
    assert all(f[0] == 1.0 for f in factors)
    assert [f[-1] for f in factors] == pytest.approx([1.06, 1.11, 1.15, 1.20, 1.25])


def _paper_shuffle(img, draws):
    """The paper's loop as written, on an (H, W, C) array: the tuple 'swap' of two views."""
    x = img.copy()
    it = iter(draws)
    for h in range(x.shape[0] - 1, 1, -1):
        for w in range(x.shape[1] - 1, 1, -1):
            dx, dy = next(it)
            x[h, w], x[h + dy, w + dx] = x[h + dy, w + dx], x[h, w]
    return x


def test_glass_blur_is_the_papers_loop_and_moves_pixels_by_at_most_one():
    x = _random(n=2, size=7)
    for i in range(2):
        # severity 1: sigma 0.05 blurs nothing (radius 0), one pass with max_delta 1
        draws = C.image_rng(5, "glass_blur", 1, i).integers(-1, 1, size=(5, 5, 2)).reshape(-1, 2)
        want = _paper_shuffle(x[i], draws)
        out = C.corrupt(x[i : i + 1], "glass_blur", 1, 5, [i])[0]
        assert np.array_equal(out, want)
        assert not np.array_equal(out, x[i])
        # rows and columns 0 and 1 are never written; the others come from (h - a, w - b)
        assert np.array_equal(out[:2], x[i, :2]) and np.array_equal(out[:, :2], x[i, :, :2])
        for h in range(2, 7):
            for w in range(2, 7):
                near = [x[i, h - a, w - b].tolist() for a in (0, 1) for b in (0, 1)]
                assert out[h, w].tolist() in near
    # the paper's 'swap' is a copy: the moved-from pixel keeps its value
    img = np.arange(48).reshape(4, 4, 3)
    moved = _paper_shuffle(img, [(-1, -1)] + [(0, 0)] * 3)
    assert moved[3, 3].tolist() == img[2, 2].tolist() == moved[2, 2].tolist()


def test_glass_blur_two_passes_between_two_blurs():
    x = _random(n=1, size=6)
    g = C.image_rng(1, "glass_blur", 4, 0)  # severity 4: sigma 0.25, two passes
    u8 = np.floor(ops.gaussian_blur(x / 255.0, 0.25)[0] * 255)
    for _ in range(2):
        u8 = _paper_shuffle(u8, g.integers(-1, 1, size=(4, 4, 2)).reshape(-1, 2))
    want = (np.clip(ops.gaussian_blur(u8[None] / 255.0, 0.25), 0, 1) * 255).astype(np.uint8)
    assert np.array_equal(C.corrupt(x, "glass_blur", 4, 1, [0]), want)
    with pytest.raises(ValueError, match="max_delta 1"):
        B.glass_pass(x.astype(float), [np.zeros((2, 2, 2), int)], 2)


def test_zoom_matrix_crops_and_stretches_the_centre():
    ramp = np.arange(32.0)
    # factor 1.25: crop ceil(25.6) = 26 from row 3, zoomed to round(32.5) = 32 rows,
    # row o reads 3 + o * 25 / 31 (linear interpolation keeps a ramp a ramp)
    assert ops.zoom_matrix(32, 1.25) @ ramp == pytest.approx(3 + ramp * 25 / 31)
    # factor 1.06: crop 31 from row 0, zoomed to 33 rows, keep rows 0..31: o * 30 / 32
    assert ops.zoom_matrix(32, 1.06) @ ramp == pytest.approx(ramp * 30 / 32)
    assert np.array_equal(ops.zoom_matrix(8, 1.0), np.eye(8))
    assert ops.zoom_matrix(32, 2.25).sum(axis=1) == pytest.approx(np.ones(32))


def test_clipped_zoom_matches_scipy_zoom_as_the_paper_calls_it():
    ndimage = pytest.importorskip("scipy.ndimage")
    x = np.random.default_rng(2).random((1, 32, 32, 3))
    for z in (1.03, 1.1300000000000001, 1.25, 1.75, 2.25):
        crop = int(np.ceil(32 / z))
        top = (32 - crop) // 2
        big = ndimage.zoom(x[0, top : top + crop, top : top + crop], (z, z, 1), order=1)
        t = (big.shape[0] - 32) // 2
        assert np.allclose(ops.clipped_zoom(x, z)[0], big[t : t + 32, t : t + 32], atol=1e-12)


def test_zoom_blur_keeps_a_constant_and_averages_zooms():
    const = np.full((1, 8, 8, 3), 77 / 255.0)
    assert np.allclose(B.zoom_blur(const, 1.26, []), const, rtol=0, atol=1e-12)
    # the float sum can land an ulp below 77/255 and truncation then gives 76 (so does the
    # paper's float32 code: 76 at severity 2); never more than that one level
    out = C.corrupt(np.full((1, 8, 8, 3), 77, np.uint8), "zoom_blur", 5, 0, [0])
    assert set(np.unique(out)) <= {76, 77}
    x = _random(n=1, size=16) / 255.0
    want = (x + sum(ops.clipped_zoom(x, z) for z in np.arange(1, 1.06, 0.01))) / 8
    assert np.allclose(B.zoom_blur(x, 1.06, []), want)
    assert not np.allclose(want, x)
    # on 8 pixels every factor below 1.0625 crops 8 and zooms back to round(8 z) = 8 rows
    assert np.array_equal(ops.zoom_matrix(8, 1.06), np.eye(8))


def test_motion_blur_writes_pixels_as_imagemagick_does():
    # ImageMagick 6.9.11-60 Q16, `convert -motion-blur 1x1+0` of the row 0 0 255 0 0 gave
    # 19 88 146 0 0: weights 0.5741, 0.3482, 0.0777 x 255 = 146.39, 88.79, 19.81 truncated
    row = np.array([0, 0, 255, 0, 0], float).reshape(1, 5, 1) / 255.0
    out = np.round(ops.motion_blur(row[None], 1, 1, np.zeros(1)) * 255).ravel()
    assert out.tolist() == [19, 88, 146, 0, 0]


def test_snow_flakes_are_zero_below_the_threshold():
    g = np.random.default_rng(0)
    c = C.FAMILIES["snow"].params[1]  # severity 2: N(0.1, 0.2), no zoom, threshold 0.5
    flakes = W.snow_flakes((128, 128), c, [g])[0, :, :, 0]
    lit = flakes[flakes > 0]
    assert lit.min() >= np.floor(0.5 * 255) / 255 and flakes.max() <= 1.0
    assert abs(lit.size / flakes.size - 0.02275) < 0.005  # P(N(0.1, 0.2) >= 0.5) = P(Z >= 2)
    assert np.array_equal(flakes * 255, np.floor(flakes * 255 + 1e-9))  # 8-bit levels


def test_snow_background_washes_towards_white():
    px = np.array([[[0.2, 0.4, 0.6]]])
    grey = 0.299 * 0.2 + 0.587 * 0.4 + 0.114 * 0.6  # 0.363; 1.5 grey + 0.5 = 1.0445
    want = 0.8 * px + 0.2 * np.maximum(px, 1.5 * grey + 0.5)
    assert W.snow_background(px, 0.8) == pytest.approx(want)
    assert W.snow_background(np.array([[[0.2]]]), 0.8) == pytest.approx(0.8 * 0.2 + 0.2 * 0.8)


def test_snow_brightens_and_is_symmetric_on_a_constant_image():
    x = _random(n=3, size=16)
    for s in range(1, 6):
        assert (C.corrupt(x, "snow", s, 0, [0, 1, 2]) >= x).all()
    # on black the washed image is constant, and streaks + their 180-degree rotation are
    # symmetric: the result equals its own rotation; at severity 5 it is 0.1 + streaks
    out = C.corrupt(np.zeros((1, 32, 32, 1), np.uint8), "snow", 5, 3, [0])[0, :, :, 0]
    assert np.array_equal(out, out[::-1, ::-1])
    assert out.min() == 25 and out.max() > 25  # 0.1 x 255 = 25.5
