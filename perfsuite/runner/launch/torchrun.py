"""`perfsuite run ... --nproc N`: start N data-parallel ranks with torchrun and collect the run.

The ranks (`runner/launch/distributed.py`) get their options through a private control folder and
answer there, one small JSON file per rank; rank 0's run folder holds the one record. Threads:
N ranks share the machine's cores, so each gets cores / N (at least 1) unless `--threads` says
otherwise, and `OMP_NUM_THREADS` says the same (torchrun would otherwise force 1). torchrun's
own output goes to `torchrun.log` in the run folder. When a rank fails, torchrun stops the
others (SIGTERM): rank 0's record keeps every finished epoch with status `crashed`, and its
error names the rank that failed first and why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from perfsuite import hostinfo
from perfsuite.record import RecordError, load_record, write_record
from perfsuite.record.io import strip_private
from perfsuite.runner.options import RunOptions

LOG_NAME = "torchrun.log"


class RankFailed(RuntimeError):
    """A rank of a data-parallel run failed; `perfsuite_run_dir` is rank 0's run folder."""


def check_options(opts: RunOptions) -> None:
    """What a data-parallel run cannot do, as one-line ValueErrors before anything starts."""
    if opts.nproc < 2:
        raise ValueError(f"--nproc {opts.nproc}: a data-parallel run needs at least 2 processes")
    if opts.counters:
        raise ValueError("--counters is not supported with --nproc > 1 (replay of one rank)")
    if opts.replay_steps:
        raise ValueError("a counters replay runs one process, not --nproc > 1")


def threads_per_rank(opts: RunOptions) -> int:
    return opts.threads or max(1, hostinfo.usable_cpus() // opts.nproc)


def command(control: Path, nproc: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(nproc),
        "-m",
        "perfsuite.runner.launch.distributed",
        str(control),
    ]


def launch(opts: RunOptions) -> Path:
    """Run `opts` on `opts.nproc` ranks; rank 0's run folder (raises like a one-process run:
    ValueError for wrong options, RankFailed with the run folder for a crash)."""
    check_options(opts)
    threads = threads_per_rank(opts)
    opts = replace(opts, threads=threads)
    control = Path(tempfile.mkdtemp(prefix="perfsuite-ddp-"))
    try:
        (control / "options.json").write_text(json.dumps(asdict(opts)), encoding="utf-8")
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        log = control / LOG_NAME
        if opts.progress:
            print(
                f"[perfsuite] data-parallel: {opts.nproc} processes (torchrun), {threads} "
                f"torch thread(s) each; their output goes to {LOG_NAME} in the run folder",
                file=sys.stderr,
                flush=True,
            )
        with open(log, "wb") as out:
            proc = subprocess.run(
                command(control, opts.nproc),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                check=False,
            )
        replies = _replies(control, opts.nproc)
        run_dir = _run_dir(control, replies)
        if run_dir is not None and run_dir.is_dir():
            shutil.copyfile(log, run_dir / LOG_NAME)
            _annotate(run_dir, None)
        return _outcome(replies, run_dir, proc.returncode, opts.nproc)
    finally:
        shutil.rmtree(control, ignore_errors=True)


def _replies(control: Path, nproc: int) -> dict[int, dict[str, Any]]:
    out = {}
    for rank in range(nproc):
        try:
            out[rank] = json.loads((control / f"rank-{rank}.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
    return out


def _run_dir(control: Path, replies: dict[int, dict[str, Any]]) -> Path | None:
    found = (replies.get(0) or {}).get("run_dir")
    if not found:
        try:
            found = json.loads((control / "started.json").read_text(encoding="utf-8"))["run_dir"]
        except (OSError, json.JSONDecodeError, KeyError):
            found = None
    return Path(found) if found else None


def _outcome(
    replies: dict[int, dict[str, Any]], run_dir: Path | None, returncode: int, nproc: int
) -> Path:
    fatal = [r for r in replies.values() if r.get("fatal")]
    if fatal:
        raise ValueError(fatal[0]["error"])
    failed = {
        k: (str(r["error"]), float(r.get("failed_at") or 0.0))
        for k, r in replies.items()
        if r.get("error")
    }
    silent = [k for k in range(nproc) if k not in replies]
    if not failed and not silent and returncode == 0 and run_dir is not None:
        return run_dir
    cause = _first_cause(failed, silent, returncode, nproc)
    if run_dir is not None and run_dir.is_dir():
        _annotate(run_dir, cause)
    exc = RankFailed(cause)
    exc.perfsuite_run_dir = run_dir  # type: ignore[attr-defined]
    raise exc


def _first_cause(
    failed: dict[int, tuple[str, float]], silent: list[int], returncode: int, nproc: int
) -> str:
    """The failure that started it: the rank that failed first (its peers then fail too, with
    "connection closed by peer" or torchrun's SIGTERM)."""
    if failed:
        k = min(failed, key=lambda r: (failed[r][0].startswith("Terminated"), failed[r][1], r))
        return f"rank {k} of {nproc} failed: {failed[k][0]}"
    if silent:
        return f"rank {silent[0]} ended without a reply (killed?; torchrun exit {returncode})"
    return f"torchrun exited with status {returncode}"


def _annotate(run_dir: Path, cause: str | None) -> None:
    """Rank 0's record lists torchrun's log and names the rank that failed (rank 0 itself may
    only have seen torchrun's SIGTERM)."""
    try:
        rec = strip_private(load_record(run_dir))
    except RecordError:
        return
    rec.setdefault("sidecars", {})["launcher_log"] = LOG_NAME
    if cause is not None and rec.get("status") in ("crashed", "running"):
        rec["status"] = "crashed"
        rec["error"] = cause[:500]
    write_record(run_dir, rec)
