"""`perfsuite run ... --profiler nsys`: an Nsight Systems profile of the run's window, made
after training so the timed run is never slowed.

A child replays the window (`perfsuite run ... --replay-window N`, as the ncu counters do)
under `nsys profile --trace cuda,nvtx`, with every aten op in an emit_nvtx range that records
input shapes (PERFSUITE_NVTX_SHAPES=1, read by the PyTorch backend's op_ranges); the report
is exported to SQLite beside the record, where `perfsuite timeline` and `perfsuite roofline`
read it. Needs `nsys` on PATH and an NVIDIA GPU; without them, `why_not` says which.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfsuite.runner.routes.counters import replay_argv
from perfsuite.runner.routes.plan import why_not
from perfsuite.traces.profile import export_command

REPORT = "profile-nsys"  # RUN/profile-nsys.nsys-rep and RUN/profile-nsys.sqlite
SHAPES_ENV = "PERFSUITE_NVTX_SHAPES"
TIMEOUT_S = 3600


def profile_command(opts: Any, run_dir: Path, steps: int) -> list[str]:
    """`nsys profile` over a child replaying `steps` steps of the run's window."""
    return [
        "nsys",
        "profile",
        "--trace",
        "cuda,nvtx",
        "--force-overwrite",
        "true",
        "--output",
        str(run_dir / REPORT),
        sys.executable,
        "-m",
        "perfsuite",
        *replay_argv(opts, steps),
    ]


def _run(cmd: list[str], env: dict[str, str] | None = None) -> str | None:
    """None when `cmd` succeeded, else its last line of output."""
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    last = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
    return f"exit {done.returncode}: {last[0][:200]}"


def record_profile(opts: Any, run_dir: Path) -> tuple[Path | None, str]:
    """Profile the run's window and export it; (the .sqlite path, what happened)."""
    why = why_not(opts.device, opts.framework)
    if why:
        return None, f"no nsys profile: {why}"
    steps = max(1, opts.profile_steps)
    env = dict(os.environ, **{SHAPES_ENV: "1"})
    err = _run(profile_command(opts, run_dir, steps), env)
    report = run_dir / f"{REPORT}.nsys-rep"
    if err or not report.is_file():
        return None, f"nsys profile failed ({err or 'no report written'})"
    out = run_dir / f"{REPORT}.sqlite"
    err = _run(export_command(report, out))
    if err:
        return None, f"nsys export failed ({err}); the report is {report}"
    return out, f"nsys profile of {steps} replayed step(s): {out}"
