"""One N x N x N matrix product per dtype (bf16, fp16, fp32 with TF32) inside one NVTX
start/end range, for `perfsuite counters --calibrate` (run under ncu by calibrate.py).

Inputs are made before the range opens, so the range holds the three GEMMs only.
"""

from __future__ import annotations

import argparse

from perfsuite.counters.calibrate import CALIBRATE_RANGE


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(prog="python -m perfsuite.counters.gemm_probe")
    ap.add_argument("--size", type=int, default=4096)
    n = ap.parse_args(argv).size
    torch.backends.cuda.matmul.allow_tf32 = True
    pairs = []
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        a = torch.randn(n, n, device="cuda", dtype=dt)
        pairs.append((a, torch.randn(n, n, device="cuda", dtype=dt)))
    torch.cuda.synchronize()
    rid = torch.cuda.nvtx.range_start(CALIBRATE_RANGE)
    for a, b in pairs:
        a @ b
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_end(rid)
    print(f"gemm_probe: 3 GEMMs of {n}^3, {2 * n**3} FLOP each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
