"""Read `.ncu-rep` reports through Nsight Compute's own Python module `ncu_report`.

`ncu_report` ships in `<Nsight Compute>/extras/python/` (also on PyPI as `ncu-report`); it is
not a dependency: `available()` says whether it imports (from the environment, else from the
install of the ncu that `find_ncu` finds), and callers fall back to the CSV export
(`ncu -i FILE --csv --page raw --print-units base`). API used (Nsight Compute "Python Report
Interface"): `load_report(path)` -> context; `num_ranges()`, `range_by_idx(i)`;
`num_actions()`, `action_by_idx(j)`; `action.name()`, `action.metric_names()`,
`action.metric_by_name(n)` -> metric with `as_double()`; `action.nvtx_state()` -> `domains()`,
`domain_by_id(d)` -> `push_pop_range(i).name()` (stack order), `start_end_ranges()`.

Checked on real reports through the real module (ncu-report 2026.3.1 from PyPI, no GPU needed):
26 public reports (T4, GTX 1660, RTX 3060/3080, A10G, A40, A100, H800; `--set full` and basic),
push/pop NVTX included (docs/counters.md). Not yet on one of ours (Tensor-Core op counters,
a start/end range).
"""

from __future__ import annotations

import glob
import importlib
import math
import os
import sys
from pathlib import Path
from typing import Any

from perfsuite.counters import ncu_binary
from perfsuite.counters.ncu_csv import NVTX_ARGS_SUFFIX, NcuData, is_metric_column, ncu_data
from perfsuite.counters.rates import counts_from_rates
from perfsuite.counters.section import CountersError, Launch
from perfsuite.devices.counter_metrics import KERNEL_TIME

SIGNATURE = b"NVR\0"  # the first bytes of a .ncu-rep


def _module() -> Any | None:
    """`ncu_report` as installed (PyPI, PYTHONPATH), else from the Nsight Compute that
    `find_ncu` finds (`<install>/extras/python`, where ncu ships it); None when neither.
    Each failed import is kept for `why_unavailable` (a shipped module can be found and still
    fail, e.g. its compiled part built for another Python)."""
    _FAILED.clear()
    try:
        return importlib.import_module("ncu_report")
    except ModuleNotFoundError:
        pass
    except Exception as exc:
        _FAILED.append(f"installed: {type(exc).__name__}: {exc}")
    for folder in shipped_dirs():
        sys.path.insert(0, str(folder))
        try:
            return importlib.import_module("ncu_report")
        except Exception as exc:
            sys.path.remove(str(folder))
            _FAILED.append(f"{folder}: {type(exc).__name__}: {exc}")
    return None


_FAILED: list[str] = []  # why the last `_module()` found no importable ncu_report


def why_unavailable() -> str:
    """One line: why `ncu_report` did not import (after `available()` said False)."""
    if _FAILED:
        return "; ".join(_FAILED)
    return (
        "not installed (`pip install ncu-report`) and not found in an Nsight Compute install "
        "(extras/python)"
    )


# Standalone Nsight Compute installs, newest first; a CUDA `bin/ncu` wrapper script on PATH can
# start one of these, so the folder beside the wrapper need not hold the tool (a CUDA 13.0
# toolkit's ncu on PATH, Nsight Compute 2025.3.1, had ncu_report in neither place beside it).
INSTALL_GLOBS = ("/opt/nvidia/nsight-compute/*", "/usr/local/NVIDIA-Nsight-Compute*")


def shipped_dirs() -> list[Path]:
    """`extras/python` folders holding ncu_report: beside the ncu binary when it is the real
    one, in `../nsight-compute-*/` when it is CUDA's `bin/ncu` wrapper, then the standalone
    installs (`INSTALL_GLOBS`)."""
    ncu = ncu_binary.find_ncu()
    if ncu is None:
        return []
    here = Path(os.path.realpath(ncu)).parent
    found = [here / "extras" / "python"]
    found += sorted(here.parent.glob("nsight-compute*/extras/python"), reverse=True)
    for pattern in INSTALL_GLOBS:
        found += [Path(d) / "extras" / "python" for d in sorted(glob.glob(pattern), reverse=True)]
    found = list(dict.fromkeys(found))
    return [d for d in found if (d / "ncu_report.py").is_file() or (d / "ncu_report").is_dir()]


def available() -> bool:
    """True when `ncu_report` imports, from the environment or from ncu's own install."""
    return _module() is not None


def origin() -> str:
    """Where the `ncu_report` in use comes from (for the output's provenance line)."""
    mod = _module()
    return str(getattr(mod, "__file__", None) or "ncu_report") if mod else "not importable"


def _nvtx(action: Any) -> tuple[list[str], set[str]]:
    """The kernel's NVTX ranges: start/end names, then the push/pop stack outermost first (as
    the CSV export lists them), each without emit_nvtx's `, seq = N` suffix. The stack is read
    by index (`push_pop_range(i)`, "the range's order on the call stack"): `push_pop_ranges()`
    returns the names sorted, which would lose which op ran inside which."""
    names: list[str] = []
    kinds: set[str] = set()
    try:
        state = action.nvtx_state()
        for dom_id in state.domains():
            dom = state.domain_by_id(dom_id)
            se = [str(x) for x in dom.start_end_ranges()]
            pp = _stack(dom)
            if pp:
                kinds.add("push/pop")
            if se:
                kinds.add("start/end")
            names.extend(NVTX_ARGS_SUFFIX.sub("", x) for x in se + pp)
    except Exception:
        return [], set()
    return names, kinds


def _stack(dom: Any, limit: int = 512) -> list[str]:
    if not hasattr(dom, "push_pop_range"):  # an older module: names only, sorted
        return [str(x) for x in dom.push_pop_ranges()]
    out = []
    for i in range(limit):
        rng = dom.push_pop_range(i)
        if rng is None:
            break
        out.append(str(rng.name()))
    return out


def _kernel_name(action: Any) -> str:
    """The demangled name (`void ns::kernel<T>(args)`), as the CSV export prints it: the
    module's default is the bare function name, which is `Kernel` for every CUTLASS template
    and would merge kernels the CSV keeps apart."""
    base = getattr(action, "NameBase_DEMANGLED", None)
    try:
        return str(action.name() if base is None else action.name(base))
    except TypeError:  # a module whose name() takes no name base
        return str(action.name())


def _attribute(metric: Any) -> str | None:
    """An attribute as the CSV export prints it: text, or a number (the chip is an id, 384)."""
    if metric is None:
        return None
    text = metric.as_string()
    if text is not None:
        return str(text)
    v = _value(metric)
    return None if v is None else (str(int(v)) if v.is_integer() else str(v))


def _value(metric: Any) -> float | None:
    if metric is None:
        return None
    try:
        v = float(metric.as_double())
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None  # NaN: ncu has no value for it (a failed replay)


def read_ncu_rep(path: str | os.PathLike[str]) -> NcuData:
    """Parse a `.ncu-rep` file; CountersError (one line, naming the file) when that fails."""
    p = Path(path)
    mod = _module()
    if mod is None:
        raise CountersError(f"{p}: the ncu_report module is not importable")
    try:
        ctx = mod.load_report(str(p))
    except Exception as e:
        raise CountersError(f"{p}: ncu_report cannot load it: {e}") from None
    launches: list[Launch] = []
    names: dict[str, None] = {}
    kinds: set[str] = set()
    rebuilt: dict[str, None] = {}
    device: dict[str, str] = {}
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            values: dict[str, float | None] = {}
            for n in action.metric_names():
                n = str(n)
                if not is_metric_column(n):
                    continue
                v = _value(action.metric_by_name(n))
                if v is not None or n.endswith(".sum"):
                    values[n] = v
            if not device:
                for key, n in (
                    ("name", "device__attribute_display_name"),
                    ("chip", "device__attribute_chip"),
                ):
                    text = _attribute(action.metric_by_name(n))
                    if text:
                        device[key] = text
                major = _value(action.metric_by_name("device__attribute_compute_capability_major"))
                minor = _value(action.metric_by_name("device__attribute_compute_capability_minor"))
                if major is not None and minor is not None:
                    device["cc"] = f"{int(major)}.{int(minor)}"
            ranges, k = _nvtx(action)
            kinds |= k
            rebuilt.update(dict.fromkeys(counts_from_rates(values)))
            names.update(dict.fromkeys(values))
            time_s = values.pop(KERNEL_TIME, None)
            launches.append(
                Launch(
                    _kernel_name(action),
                    values,
                    time_s=None if time_s is None else time_s * 1e-9,
                    ranges=tuple(ranges),
                )
            )
    if not launches:
        # ncu_report loads any file, a non-report as an empty one: tell the two apart by the
        # signature all 26 reports we have read start with (T4 to H800, several ncu versions)
        with open(p, "rb") as fh:
            if fh.read(4) != SIGNATURE:
                raise CountersError(f"{p}: not an Nsight Compute report (no NVR signature)")
        raise CountersError(f"{p}: no kernel results in the report (nothing was profiled?)")
    return ncu_data(launches, list(names), device, kinds, rebuilt)
