"""Common corruptions: determinism, and each family's definition on tiny images (expected
values worked out from the paper's formulas here, not from the implementation)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

pytest.importorskip("PIL")

from perfsuite.generalization import corruption_ops as ops
from perfsuite.generalization import corruptions as C


def _random(n=6, size=12, channels=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, channels), np.uint8)


def _grey(value, size=4):
    return np.full((1, size, size, 1), value, np.uint8)


@pytest.mark.parametrize("family", list(C.FAMILIES))
def test_same_seed_same_images_and_independent_of_batching(family):
    x = _random()
    idx = np.arange(len(x))
    a = C.corrupt(x, family, 3, seed=7, indices=idx)
    b = C.corrupt(x, family, 3, seed=7, indices=idx)
    assert a.dtype == np.uint8 and a.shape == x.shape
    assert np.array_equal(a, b)
    # image i depends only on (seed, family, severity, i): a subset in another order agrees
    sub = C.corrupt(x[[4, 1]], family, 3, seed=7, indices=[4, 1])
    assert np.array_equal(sub, a[[4, 1]])


@pytest.mark.parametrize(
    "family",
    ["gaussian_noise", "shot_noise", "impulse_noise", "motion_blur", "fog", "glass_blur", "snow"],
)
def test_random_families_change_with_the_seed(family):
    x = _random()
    idx = np.arange(len(x))
    assert not np.array_equal(C.corrupt(x, family, 5, 0, idx), C.corrupt(x, family, 5, 1, idx))


@pytest.mark.parametrize("family", ["glass_blur", "snow", "motion_blur", "fog"])
def test_the_same_image_at_another_index_is_corrupted_differently(family):
    x = _random(n=1, size=16)
    out = C.corrupt(np.concatenate([x, x]), family, 4, seed=0, indices=[0, 1])
    assert not np.array_equal(out[0], out[1])


def test_contrast_maps_known_pixels():
    # two pixels 0 and 255 (mean 0.5); severity 1 (c = 0.75): 0.5 +- 0.5 * 0.75
    x = np.array([0, 255, 0, 255], np.uint8).reshape(1, 2, 2, 1)
    out = C.corrupt(x, "contrast", 1, 0, [0])
    assert out.ravel().tolist() == [31, 223, 31, 223]  # 0.125 * 255 = 31.9, 0.875 * 255 = 223.1
    out5 = C.corrupt(x, "contrast", 5, 0, [0])  # c = 0.15: 0.425 and 0.575
    assert out5.ravel().tolist() == [108, 146, 108, 146]


def test_brightness_grey_and_colour():
    out = C.corrupt(_grey(100), "brightness", 1, 0, [0])  # 100/255 + 0.05 -> 112.75
    assert (out == 112).all()
    # colour: value channel + 0.1 with hue and saturation kept scales all channels by V'/V
    x = np.array([200, 100, 50], np.uint8).reshape(1, 1, 1, 3)
    out = C.corrupt(x, "brightness", 2, 0, [0]).ravel()
    v = 200 / 255 + 0.1
    expected = [math.floor(255 * v * k / 200 + 1e-9) for k in (200, 100, 50)]
    assert np.abs(out.astype(int) - expected).max() <= 1


def test_saturate_scales_saturation_and_needs_colour():
    x = np.array([200, 100, 50], np.uint8).reshape(1, 1, 1, 3)
    out = C.corrupt(x, "saturate", 1, 0, [0]).ravel()  # S 0.75 -> 0.225, hue and V kept
    assert np.abs(out.astype(int) - [200, 170, 155]).max() <= 1
    assert C.applicable("saturate", 1) is not None
    with pytest.raises(ValueError, match="saturate: needs colour"):
        C.corrupt(_grey(10), "saturate", 1, 0, [0])


def test_gaussian_shot_impulse_noise_follow_their_formulas():
    x = _random(n=2, size=16)
    idx = [0, 1]
    xf = x / 255.0
    for family, c, draw in (
        ("gaussian_noise", 0.08, lambda g, img: img + g.normal(scale=0.08, size=img.shape)),
        ("shot_noise", 100, lambda g, img: g.poisson(img * 100) / 100),
    ):
        want = np.stack([draw(C.image_rng(3, family, 3, i), xf[i]) for i in idx])
        want = (np.clip(want, 0, 1) * 255).astype(np.uint8)
        assert np.array_equal(C.corrupt(x, family, 3, 3, idx), want), (family, c)
    out = C.corrupt(np.full((1, 64, 64, 3), 128, np.uint8), "impulse_noise", 5, 0, [0])
    changed = out != 128
    assert set(np.unique(out[changed])) <= {0, 255}
    assert abs(changed.mean() - 0.07) < 0.01  # amount 0.07 at severity 5


def test_defocus_blur_of_a_point_is_the_disk_kernel():
    # severity 1: radius 0.3 (the disk is the centre pixel), anti-aliased by a 3x3 Gaussian of
    # sigma 0.4: centre weight g0^2, edge neighbour g0*g1, g = exp(-x^2/(2 0.4^2)) normalized
    g1 = math.exp(-1 / (2 * 0.4**2))
    g0, g1 = 1 / (1 + 2 * g1), g1 / (1 + 2 * g1)
    x = np.zeros((1, 5, 5, 1), np.uint8)
    x[0, 2, 2, 0] = 255
    out = C.corrupt(x, "defocus_blur", 1, 0, [0])[0, :, :, 0]
    assert out[2, 2] == math.floor(255 * g0 * g0)
    assert out[2, 3] == math.floor(255 * g0 * g1) == out[1, 2]
    assert out[0, 0] == 0
    k = C.defocus_kernel(1.5, 0.1)
    assert k.sum() == pytest.approx(1.0) and np.allclose(k, k.T) and np.allclose(k, k[::-1])


def test_gaussian_blur_keeps_constants_and_spreads_a_point():
    assert (C.corrupt(_grey(77, 6), "gaussian_blur", 5, 0, [0]) == 77).all()
    x = np.zeros((1, 9, 9, 1), np.uint8)
    x[0, 4, 4, 0] = 255
    out = C.corrupt(x, "gaussian_blur", 5, 0, [0])[0, :, :, 0]  # sigma 1, radius 4
    w = np.exp(-0.5 * np.arange(-4, 5) ** 2)
    w /= w.sum()
    assert out[4, 4] == math.floor(255 * w[4] ** 2 + 1e-9)


def test_motion_kernel_is_one_sided_gaussian_along_the_angle():
    w, dy, dx = ops.motion_taps(6, 1, np.array([0.0, 45.0]))
    assert len(w) == 13 and dy.shape == dx.shape == (2, 13)
    assert dy[0].tolist() == [0] * 13 and dx[0].tolist() == list(range(13))
    assert w.sum() == pytest.approx(1.0)
    assert w[1] / w[0] == pytest.approx(math.exp(-0.5))
    assert (dy[1, 4], dx[1, 4]) == (3, 3)  # 4 * cos 45 = 2.83 -> 3
    assert (C.corrupt(_grey(90, 8), "motion_blur", 5, 0, [0]) == 90).all()


def test_pixelate_is_box_down_and_up():
    x = np.array([[0, 100, 10, 10], [100, 200, 10, 10], [50, 50, 0, 0], [50, 50, 0, 0]])
    x = x.astype(np.uint8).reshape(1, 4, 4, 1)
    out = C.corrupt(x, "pixelate", 5, 0, [0])[0, :, :, 0]  # int(4 * 0.65) = 2
    assert out.tolist() == [[100, 100, 10, 10], [100, 100, 10, 10], [50, 50, 0, 0], [50, 50, 0, 0]]


def test_jpeg_is_pil_at_the_severity_quality():
    from PIL import Image

    x = _random(n=1, size=16)
    buf = io.BytesIO()
    Image.fromarray(x[0]).save(buf, "JPEG", quality=40)  # severity 5
    want = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    assert np.array_equal(C.corrupt(x, "jpeg_compression", 5, 0, [0])[0], want)


def test_fog_adds_scaled_plasma():
    x = _random(n=1, size=8)
    g = C.image_rng(2, "fog", 4, 0)
    layer = ops.plasma(8, 2, g)  # severity 4: (1, 2)
    assert layer.min() == 0 and layer.max() == 1
    top = (x[0] / 255.0).max()
    want = np.clip((x[0] / 255.0 + 1.0 * layer[..., None]) * top / (top + 1.0), 0, 1)
    assert np.array_equal(C.corrupt(x, "fog", 4, 2, [0])[0], (want * 255).astype(np.uint8))


def test_elastic_without_displacement_is_identity_and_moves_pixels_otherwise():
    img = _random(n=1, size=8)[0] / 255.0
    g = np.random.default_rng(0)
    assert np.allclose(C.elastic_one(img, 0.0, 0.0, 0.0, g), img)
    x = _random(n=3, size=32)
    out = C.corrupt(x, "elastic_transform", 4, 0, [0, 1, 2])
    assert not np.array_equal(out, x)
    assert abs(out.mean() - x.mean()) < 10  # a warp moves pixels; it does not recolour


def test_hsv_round_trip_and_border_maps():
    rgb = np.random.default_rng(1).random((50, 3))
    assert np.allclose(ops.hsv_to_rgb(ops.rgb_to_hsv(rgb)), rgb)
    assert ops.reflect101(np.array([-2, -1, 0, 3, 4, 5]), 4).tolist() == [2, 1, 0, 3, 2, 1]
    assert ops.symmetric(np.array([-2, -1, 0, 3, 4, 5]), 4).tolist() == [1, 0, 0, 3, 3, 2]


def test_bad_arguments_are_refused():
    x = _random(n=1)
    with pytest.raises(ValueError, match="unknown corruption 'frost'"):
        C.corrupt(x, "frost", 1, 0, [0])
    with pytest.raises(ValueError, match="severity must be 1-5"):
        C.corrupt(x, "contrast", 6, 0, [0])
