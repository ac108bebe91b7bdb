"""Reference networks: architecture pinned by parameter counts, FLOPs by hand computation."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from perfsuite.flops import count_model  # noqa: E402
from perfsuite.models import ModelSpecError, resolve_model  # noqa: E402


def conv_macs(hw_out: int, cout: int, cin: int, k: int) -> int:
    return hw_out * hw_out * cout * cin * k * k


def cifar_resnet_macs(n: int) -> int:
    """He et al. 2016 CIFAR ResNet (6n+2 layers, option-A shortcuts: no MACs), batch 1."""
    stem = conv_macs(32, 16, 3, 3)  # 442,368
    stage1 = 2 * n * conv_macs(32, 16, 16, 3)  # every conv 16->16 on 32x32
    stage2 = conv_macs(16, 32, 16, 3) + (2 * n - 1) * conv_macs(16, 32, 32, 3)
    stage3 = conv_macs(8, 64, 32, 3) + (2 * n - 1) * conv_macs(8, 64, 64, 3)
    fc = 64 * 10
    return stem + stage1 + stage2 + stage3 + fc


def test_cifar_hand_computation_values():
    assert (cifar_resnet_params(3), cifar_resnet_params(9)) == (269_722, 853_018)
    # 442,368 + 6*2,359,296 + 2*(1,179,648 + 5*2,359,296) + 640
    assert cifar_resnet_macs(3) == 40_551_040
    # 442,368 + 18*2,359,296 + 2*(1,179,648 + 17*2,359,296) + 640
    assert cifar_resnet_macs(9) == 125_485_696


def cifar_resnet_params(n: int) -> int:
    """Conv weights (no bias) + BN scale/shift + fc: 269,722 for n=3 (the paper's 0.27M)."""
    convs = 3 * 16 * 9 + 2 * n * 16 * 16 * 9
    convs += 16 * 32 * 9 + (2 * n - 1) * 32 * 32 * 9 + 32 * 64 * 9 + (2 * n - 1) * 64 * 64 * 9
    bn = 2 * (16 + 2 * n * (16 + 32 + 64))
    return convs + bn + 64 * 10 + 10


@pytest.mark.parametrize(("name", "n"), [("resnet20", 3), ("resnet56", 9)])
def test_cifar_resnets(name, n):
    model = resolve_model(f"builtin:{name}").model
    assert sum(p.numel() for p in model.parameters()) == cifar_resnet_params(n)
    res = count_model(model, (1, 3, 32, 32))
    bias_adds = 10  # the fc bias: one add per logit
    assert res.flops_of("convolution", "matmul") == 2 * cifar_resnet_macs(n) + bias_adds
    assert res.unknown_ops == []


def test_resnet18_matches_torchvision_count():
    model = resolve_model("resnet18").model
    assert sum(p.numel() for p in model.parameters()) == 11_689_512  # torchvision's count
    res = count_model(model, (1, 3, 224, 224))
    # torchvision ResNet-18 at 224x224: 1,814,073,344 conv+linear MACs; + 1000 fc bias adds
    assert res.flops_of("convolution", "matmul") == 2 * 1_814_073_344 + 1000
    assert res.unknown_ops == []


def test_resnet50_forward_count():
    model = resolve_model("builtin:resnet50").model
    assert sum(p.numel() for p in model.parameters()) == 25_557_032  # torchvision's count
    res = count_model(model, (2, 3, 224, 224))
    assert res.flops_of("convolution", "matmul") == 2 * (2 * 4_089_184_256) + 2 * 1000


def test_training_step_counts_backward_twice_forward_for_convs():
    res = count_model(resolve_model("resnet20").model, (2, 3, 32, 32), train=True,
                      optimizer="sgd")  # fmt: skip
    fwd = res.flops_of("convolution", phase="forward")
    bwd = res.flops_of("convolution", phase="backward")
    # every conv but the stem (input needs no grad) computes grad_input and grad_weight
    stem = 2 * 2 * conv_macs(32, 16, 3, 3)
    assert bwd == 2 * fwd - stem
    # SGD, momentum, Nesterov, weight decay on every parameter: 8 FLOPs per element
    assert res.flops_of(phase="optimizer") == 8 * 269_722
    assert res.unknown_ops == []


def test_resolver_errors_and_callables():
    with pytest.raises(ModelSpecError, match="unknown built-in model 'resnet99'"):
        resolve_model("builtin:resnet99")
    with pytest.raises(ModelSpecError, match="expected builtin:NAME"):
        resolve_model("nonsense")
    with pytest.raises(ModelSpecError, match="cannot import"):
        resolve_model("no_such_module_xyz:f")
    r = resolve_model("perfsuite.models.cifar_resnet:resnet20")
    assert r.model.fc.out_features == 10


def test_torchvision_spec_without_torchvision_suggests_builtin():
    try:
        import torchvision  # noqa: F401
    except ImportError:
        with pytest.raises(ModelSpecError, match="try builtin:resnet50"):
            resolve_model("torchvision:resnet50")
    else:
        tv = resolve_model("torchvision:resnet18").model
        ours = resolve_model("resnet18").model
        assert sum(p.numel() for p in tv.parameters()) == sum(p.numel() for p in ours.parameters())


def test_workload_spec():
    try:
        from perfsuite.workloads import get_workload

        get_workload("cifar10")
    except Exception as exc:  # the workloads module is written elsewhere; tolerate its absence
        pytest.skip(f"workloads not available: {exc}")
    r = resolve_model("workload:cifar10")
    assert r.input_shape == (3, 32, 32)
    res = count_model(r.model, (1, *r.input_shape))
    assert res.total_flops > 0
