"""Calibration: do the Tensor-Core counters give 2*M*N*K FLOP for one M x N x K matrix product?

`check_calibration` is pure (a `counters` section in, a result out); `run_calibration`
runs `python -m perfsuite.counters.gemm_probe` under ncu (one GEMM per dtype inside the NVTX
start/end range `perfsuite.calibrate`) and checks the result.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.counters.collect import run_ncu

CALIBRATE_RANGE = "perfsuite.calibrate"
PRECISIONS = ("bf16", "fp16", "tf32")


@dataclass
class PrecisionCheck:
    precision: str
    expected_flops: float
    measured_flops: float | None  # None: not measured (no counter for it in the capture)
    ok: bool
    detail: str


@dataclass
class CalibrationResult:
    m: int
    n: int
    k: int
    checks: list[PrecisionCheck] = field(default_factory=list)
    device: dict[str, Any] = field(default_factory=dict)  # {name, cc, chip} from the capture

    @property
    def expected_flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def ok(self) -> bool:
        """Every requested precision measured and equal to 2*M*N*K."""
        return bool(self.checks) and all(c.ok for c in self.checks)


def check_calibration(
    section: Mapping[str, Any],
    m: int,
    n: int,
    k: int,
    precisions: Sequence[str] = PRECISIONS,
    gemms_per_precision: int = 1,
    rel_tol: float = 0.0,
) -> CalibrationResult:
    """Compare measured Tensor-Core FLOP per precision with 2*M*N*K per GEMM (exact by default:
    the counters count every op, and 2*4096^3 is far below 2**53)."""
    result = CalibrationResult(m, n, k, device=dict(section.get("device") or {}))
    expected = 2.0 * m * n * k * gemms_per_precision
    by_prec = (section.get("totals") or {}).get("flops_tensor_by_precision") or {}
    source = section.get("source") or {}
    for p in precisions:
        got = by_prec.get(p)
        if got is None:
            why = source.get(f"tensor_{p}", "no counter for it in the capture")
            result.checks.append(PrecisionCheck(p, expected, None, False, f"not measured: {why}"))
            continue
        ok = abs(got - expected) <= rel_tol * expected
        ratio = got / expected if expected else float("nan")
        detail = "exact" if got == expected else f"measured/expected = {ratio:.6f}"
        result.checks.append(PrecisionCheck(p, expected, float(got), ok, detail))
    return result


def run_calibration(
    size: int = 4096, out_dir: Path | None = None, timeout_s: float = 600
) -> tuple[CalibrationResult | None, str]:
    """Run the GEMM probe under ncu on the local GPU; (None, why) when that cannot be done."""
    try:
        import torch

        has_gpu = torch.version.cuda is not None and torch.cuda.is_available()
    except Exception:
        has_gpu = False
    if not has_gpu:
        return None, "calibration needs an NVIDIA GPU with CUDA PyTorch; none is visible here"
    program = [sys.executable, "-m", "perfsuite.counters.gemm_probe", "--size", str(size)]
    tmp = None
    if out_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="perfsuite-calibrate-")
        out_dir = Path(tmp.name)
    try:
        section, why = run_ncu(program, out_dir, nvtx_range=CALIBRATE_RANGE, timeout_s=timeout_s)
        if section is None:
            return None, why
        return check_calibration(section, size, size, size), why
    finally:
        if tmp is not None:
            tmp.cleanup()
