"""The framework seam: PyTorch's and TensorFlow's run hooks both implement `FrameworkParts`,
member for member and parameter for parameter (importing the TensorFlow hooks needs no
TensorFlow)."""

from __future__ import annotations

import inspect

import pytest

from perfsuite.runner.frameworks.parts import FrameworkParts, TorchParts, run_parts
from perfsuite.runner.frameworks.tf_parts import TFRunParts


def _members() -> dict[str, object]:
    names = {n for n in vars(FrameworkParts) if not n.startswith("_") and n not in ("framework",)}
    return {n: getattr(FrameworkParts, n) for n in sorted(names)}


def test_the_protocol_lists_what_the_loop_calls():
    assert set(_members()) == {
        "apply_process_switches", "check_switches", "load_data", "build_model", "build_state",
        "parameter_count", "watch_first_layer", "switch_effects", "math_section",
        "count_step_work", "profile_window", "save_threshold_model", "threshold_model",
        "zero_loss", "add_loss",
    }  # fmt: skip
    assert "framework" in FrameworkParts.__annotations__


@pytest.mark.parametrize(("cls", "name"), [(TorchParts, "pytorch"), (TFRunParts, "tensorflow")])
def test_each_framework_implements_every_member_with_its_parameters(cls, name):
    parts = cls()
    assert isinstance(parts, FrameworkParts)
    assert parts.framework == name
    for member, proto in _members().items():
        impl = getattr(cls, member, None)
        assert callable(impl), f"{cls.__name__}.{member} missing"
        want = [(p.name, p.kind) for p in inspect.signature(proto).parameters.values()]
        got = [(p.name, p.kind) for p in inspect.signature(impl).parameters.values()]
        assert got == want, f"{cls.__name__}.{member}{inspect.signature(impl)}"


def test_run_parts_picks_the_framework():
    assert isinstance(run_parts("pytorch"), TorchParts)
    assert isinstance(run_parts("tensorflow"), TFRunParts)


def test_a_class_missing_a_member_is_not_framework_parts():
    class Partial:
        framework = "x"

        def zero_loss(self, backend):
            return 0

    assert not isinstance(Partial(), FrameworkParts)
