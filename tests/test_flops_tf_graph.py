"""TensorFlow graph counter on single ops: SAME padding (asymmetric for even kernels and for
strides), grouped convolutions, max-pool windows and the bytes of MaxPoolGrad and
AssignVariableOp. Graphs are traced, never run. Hand-derived values."""

from __future__ import annotations

import pytest

from perfsuite.flops.tf_graph import count_graph

pytestmark = pytest.mark.usefixtures("tf")


@pytest.fixture
def X(tf):
    return tf.TensorSpec((1, 8, 8, 4), tf.float32)  # NHWC, 4 channels


def rows(fn, *specs) -> dict[str, tuple[float, float]]:
    """{TF op type: (flops, bytes)} of the live ops of `fn` traced for `specs`."""
    import tensorflow as tf

    cf = tf.function(fn).get_concrete_function(*specs)
    res = count_graph(cf.graph, cf.outputs)
    out: dict[str, tuple[float, float]] = {}
    for r in res.per_op:
        f, b = out.get(r.op, (0.0, 0.0))
        out[r.op] = (f + r.flops, b + r.bytes)
    return out


def conv_flops(tf, X, kh: int, kw: int, cin: int, stride: int, padding: str) -> float:
    w = tf.TensorSpec((kh, kw, cin, 6), tf.float32)
    return rows(lambda x, w: tf.nn.conv2d(x, w, stride, padding), X, w)["Conv2D"][0]


def test_conv_same_padding_uses_the_real_output_size(tf, X):
    # 3x3 stride 2 SAME on 8x8: out 4x4 -> 2 * 4*4 * 6 * 4 * 9 = 6,912 (was 3,888: 3x3)
    assert conv_flops(tf, X, 3, 3, 4, 2, "SAME") == 2 * 16 * 6 * 4 * 9
    # 4x4 stride 1 SAME: out 8x8 (pads 1 before, 2 after) -> 2 * 64 * 6 * 4 * 16 = 49,152
    assert conv_flops(tf, X, 4, 4, 4, 1, "SAME") == 2 * 64 * 6 * 4 * 16
    assert conv_flops(tf, X, 3, 3, 4, 2, "VALID") == 2 * 9 * 6 * 4 * 9  # out 3x3, unchanged


def test_grouped_conv_counts_its_groups(tf, X):
    # filter with 2 input channels on a 4-channel input: groups = 2;
    # 2 * 8*8 * 6 * (4 / 2) * 9 = 13,824 (was 27,648 with groups 1)
    assert conv_flops(tf, X, 3, 3, 2, 1, "SAME") == 2 * 64 * 6 * 2 * 9


@pytest.mark.parametrize(("cin", "stride", "out_hw"), [(2, 1, 8), (4, 2, 4)])
def test_conv_backprops_grouped_and_strided(tf, X, cin, stride, out_hw):
    def grads(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.conv2d(x, w, stride, "SAME")
        return tape.gradient(y, [x, w])

    got = rows(grads, X, tf.TensorSpec((3, 3, cin, 6), tf.float32))
    # each gradient costs the forward MACs: 2 * out_hw^2 * 6 * cin * 9
    macs2 = 2 * out_hw * out_hw * 6 * cin * 9
    assert got["Conv2DBackpropInput"][0] == macs2
    assert got["Conv2DBackpropFilter"][0] == macs2


def test_max_pool_same_and_its_gradient_bytes(tf, X):
    pool = rows(lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"), X)
    # out 4x4x4 = 64 windows of 3x3 = 576 (was 324: a 3x3 output)
    assert pool["MaxPool"][0] == 64 * 9

    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.max_pool2d(x, 2, 2, "VALID")
        return tape.gradient(y, x)

    # MaxPoolGrad(x, y, dy): one add per dy element (4*4*4 = 64); reads x 1,024 + y 256 +
    # dy 256 and writes dx 1,024 (TensorFlow keeps no argmax indices, it re-reads x and y)
    assert rows(grad, X)["MaxPoolGrad"] == (64, 1024 + 256 + 256 + 1024)


def test_assign_reads_the_value_and_writes_the_variable(tf):
    v = tf.Variable(tf.zeros(1000))

    def assign(x):
        v.assign(x)
        return tf.constant(0.0)

    # 1000 float32 read, 1000 written: 8,000 (was 12,000 with the variable read)
    assert rows(assign, tf.TensorSpec((1000,), tf.float32))["AssignVariableOp"] == (0, 8000)
