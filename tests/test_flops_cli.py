"""`perfsuite flops` end to end on a tiny model."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from perfsuite.cli import main


def tiny_model():
    """Conv(1->2, 3x3, no bias) on 1x4x4 -> ReLU -> flatten -> Linear(8 -> 3)."""
    from torch import nn

    return nn.Sequential(nn.Conv2d(1, 2, 3, bias=False), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))


def run_json(capsys, *argv):
    assert main(["flops", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_forward_json(capsys):
    out = run_json(capsys, "tests.test_flops_cli:tiny_model", "--input", "1,4,4", "--batch", "2")
    conv = 2 * 2 * 2 * 2 * 2 * 1 * 9  # 2*N*Cout*Hout*Wout*Cin*k*k = 288
    linear = 2 * 2 * 8 * 3 + 2 * 3  # addmm + bias
    relu = 2 * 2 * 2 * 2
    assert out["total_flops"] == conv + linear + relu
    assert out["conv_linear_flops"] == conv + linear
    assert out["other_flops"] == relu
    assert out["by_family"]["convolution"]["flops"] == conv
    assert out["input_shapes"] == [[2, 1, 4, 4]]
    assert out["provenance"] == {"flops": "counted", "bytes": "modeled"}
    assert out["unknown_ops"] == []
    assert {r["op"] for r in out["per_op"]} == {"aten::convolution", "aten::relu", "aten::addmm"}


def test_train_json_has_all_phases(capsys):
    out = run_json(capsys, "tests.test_flops_cli:tiny_model", "--input", "1x4x4",
                   "--optimizer", "adamw")  # fmt: skip
    assert out["mode"] == "train" and out["optimizer"] == "adamw"
    assert set(out["by_phase"]) == {"forward", "backward", "optimizer"}
    params = 2 * 9 + 8 * 3 + 3
    assert out["by_phase"]["optimizer"]["flops"] == 14 * params + 3  # + step counters


def test_text_output_and_module_breakdown(capsys):
    assert main(["flops", "tests.test_flops_cli:tiny_model", "--input", "1,4,4", "--by",
                 "module"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "conv + linear/matmul give" in text
    assert "Sequential.0" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["builtin:nope"], "unknown built-in model"),
        (["tests.test_flops_cli:tiny_model"], "give --input"),
        (["tests.test_flops_cli:tiny_model", "--input", "a,b"], "expected integers"),
        (["workload:cifar10", "--input", "3,x"], "--input '3,x': part 'x' is not a positive"),
        (["workload:cifar10", "--input", "3,224,2x24"], "part '2x24' is not a positive integer"),
        (["resnet20", "--batch", "0"], "--batch 0"),
    ],
)
def test_errors_are_one_line(capsys, argv, message):
    assert main(["flops", *argv]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("perfsuite: error: ")
    assert message in last
