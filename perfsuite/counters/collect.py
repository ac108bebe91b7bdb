"""Choose and run a hardware-counter collector for `perfsuite run --counters {cupti,ncu}`.

Nothing here raises: every function returns a result plus a one-line reason, so a missing
collector never stops a training run. CUPTI's range profiler is probed once per process (public
PyTorch wheels lack Kineto's range profiler: they write no `cuda_profiler_range` events); ncu
is an external program that re-runs the workload in a child process (`--replay-window N`)
inside the NVTX start/end range the child marks.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfsuite.counters import ncu_binary
from perfsuite.counters.cupti_trace import RANGE_CATEGORY
from perfsuite.counters.ncu import STEPS_RANGE, counters_from_ncu, ncu_command
from perfsuite.counters.ncu_binary import NCU_ENV
from perfsuite.counters.section import CountersError

CSV_NAME = "counters-ncu.csv"
LOG_NAME = "counters-ncu.log"


_PROBE = """
import json, sys, tempfile, os
import torch
cfg = torch.profiler._ExperimentalConfig(
    profiler_metrics=["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"],
    profiler_measure_per_kernel=True)
a = torch.ones(64, 64, device="cuda")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA],
                            experimental_config=cfg) as prof:
    (a @ a).sum().item()
fd, path = tempfile.mkstemp(suffix=".json"); os.close(fd)
prof.export_chrome_trace(path)
text = open(path, errors="replace").read(); os.unlink(path)
print("PROBE", json.dumps({"ranges": text.count(sys.argv[1])}))
"""


@functools.lru_cache(maxsize=1)
def cupti_range_profiler_available() -> tuple[bool, str]:
    """Whether torch.profiler can collect CUPTI range-profiler metrics here (probed once).

    On a GPU the probe profiles one small matmul with a CUPTI metric in a CHILD process (a
    profiler that is missing or broken must not take the run down) and looks for
    `cuda_profiler_range` events in its trace.
    """
    try:
        import torch
    except Exception as e:
        return False, f"torch not importable ({type(e).__name__})"
    if getattr(torch.version, "cuda", None) is None:
        return False, f"CPU-only torch build ({torch.__version__}): no CUDA, no CUPTI"
    try:
        if not torch.cuda.is_available():
            return False, "torch sees no CUDA device"
        return _probe_range_profiler(torch.__version__)
    except Exception as e:
        return False, f"CUPTI range-profiler probe failed: {type(e).__name__}: {e}".splitlines()[0]


def _probe_range_profiler(version: str, timeout_s: float = 300) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, RANGE_CATEGORY],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"CUPTI range-profiler probe ran past {timeout_s:g} s"
    line = next((x for x in proc.stdout.splitlines() if x.startswith("PROBE ")), None)
    if proc.returncode != 0 or line is None:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return False, f"CUPTI range-profiler probe failed (status {proc.returncode}): {last}"
    if json.loads(line[len("PROBE ") :]).get("ranges", 0) > 0:
        return True, "CUPTI range profiler available through torch.profiler"
    return False, (
        f"this torch build ({version}) writes no '{RANGE_CATEGORY}' events: Kineto's CUPTI "
        "range profiler is not in public wheels"
    )


def choose_collector(requested: str, is_gpu: bool) -> tuple[str | None, str]:
    """The collector to use for `--counters requested`, or None, with a one-line reason."""
    if requested not in ("cupti", "ncu"):
        return None, f"unknown counters collector {requested!r} (expected cupti or ncu)"
    if not is_gpu:
        return None, "hardware counters need an NVIDIA GPU; this run is not on one"
    if requested == "cupti":
        ok, why = cupti_range_profiler_available()
        if ok:
            return "cupti", why
        ncu = ncu_binary.find_ncu()
        if ncu:
            return "ncu", f"{why}; using Nsight Compute instead ({ncu})"
        return None, f"{why}; and no ncu found (set ${NCU_ENV} or put ncu on PATH)"
    ncu = ncu_binary.find_ncu()
    if ncu:
        return "ncu", f"Nsight Compute at {ncu}"
    return None, f"ncu not found (set ${NCU_ENV} or put Nsight Compute's ncu on PATH)"


def _window_steps(argv: list[str]) -> int | None:
    for i, a in enumerate(argv):
        m = re.fullmatch(r"--replay-window(?:=(\d+))?", a)
        if m:
            text = m.group(1) or (argv[i + 1] if i + 1 < len(argv) else "")
            return int(text) if text.isdigit() else None
    return None


def run_ncu(
    program: list[str],
    out_dir: Path,
    *,
    nvtx_range: str | None = STEPS_RANGE,
    timeout_s: float = 1800,
    window_steps: int | None = None,
    metrics: list[str] | None = None,
) -> tuple[dict[str, Any] | None, str]:
    """Run `program` under ncu, CSV to out_dir/counters-ncu.csv; the section or (None, why)."""
    ncu = ncu_binary.find_ncu()
    if ncu is None:
        return None, f"ncu not found (set ${NCU_ENV} or put Nsight Compute's ncu on PATH)"
    try:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        csv_path, log_path = out_dir / CSV_NAME, out_dir / LOG_NAME
        cmd = ncu_command(program, metrics=metrics, nvtx_range=nvtx_range, ncu=ncu)
        with open(csv_path, "wb") as out, open(log_path, "wb") as err:
            proc = subprocess.run(cmd, stdout=out, stderr=err, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return None, f"ncu ran past {timeout_s:g} s and was stopped (log: {log_path})"
    except OSError as e:
        return None, f"cannot run ncu ({ncu}): {e.strerror or e}"
    if proc.returncode != 0:
        tail = _last_line(log_path) or _last_line(csv_path)
        return None, f"ncu exited with status {proc.returncode}: {tail} (log: {log_path})"
    try:
        section = counters_from_ncu(csv_path, window_steps=window_steps, nvtx_range=nvtx_range)
    except CountersError as e:
        return None, str(e)
    except Exception as e:
        return None, f"{csv_path}: unreadable ncu output: {type(e).__name__}: {e}".splitlines()[0]
    section["file"] = csv_path.name
    return section, f"ncu profiled {section['totals']['calls']} kernel launches"


def collect_ncu(
    replay_argv: list[str],
    out_dir: Path,
    *,
    nvtx_range: str = STEPS_RANGE,
    timeout_s: float = 1800,
) -> tuple[dict[str, Any] | None, str]:
    """Counters of `python -m perfsuite <replay_argv>` (a `--replay-window N` run) under ncu.

    The child marks the replayed steps with the NVTX start/end range `nvtx_range`; the CSV goes
    to out_dir and `section["file"]` names it relative to out_dir (the run folder).
    """
    program = [sys.executable, "-m", "perfsuite", *replay_argv]
    return run_ncu(
        program,
        Path(out_dir),
        nvtx_range=nvtx_range,
        timeout_s=timeout_s,
        window_steps=_window_steps(list(replay_argv)),
    )


def _last_line(path: Path) -> str:
    try:
        lines = [x.strip() for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""
