"""`perfsuite peaks`: measure, cache and show this machine's ceilings next to the spec table."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, positive_int, print_json, status


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "peaks",
        help="measure and cache peak FLOP/s and memory bandwidth (roofline ceilings)",
        description=(
            "Measure peak FLOP/s per dtype (the best of a large matrix product, 2*M*N*K/t, and "
            "on CPUs 3x3 convolutions, 2*N*K*H*W*C*r*r/t) and memory bandwidth (large copy, "
            "read+write bytes / t), keep the best reading of each per host, device, torch "
            "version and (CPU) thread count, and print them next to the spec: the vendor's "
            "table for GPUs, and for CPUs FMA width x clock x cores from the CPU flags (an "
            "upper bound, its assumptions printed; or why it is unknown). A reading on a busy "
            "machine (1-minute load before or after > cpus - threads + 0.5) raises the best "
            "when higher and never lowers it; the load at measurement is shown for each value, "
            "and a best taken busy is measured again next time."
        ),
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    p.add_argument(
        "--dtype",
        action="append",
        metavar="DTYPE",
        help="dtype to measure (repeatable; default: all measurable on the device: "
        "float32, bfloat16, float64; plus float16, tf32 on CUDA)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="quick mode (a few seconds; what `perfsuite run` uses) instead of thorough",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        help="torch threads to measure with (default: torch's); CPU peaks are cached per "
        "thread count, and a `run --threads N` is judged against the N-thread peak (GPU peaks "
        "are cached for any thread count)",
    )
    p.add_argument(
        "--refresh",
        action="store_true",
        help="re-measure even if cached (the higher of the new and the cached value is kept)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        dest="settings",
        help="store a user-named peak instead of measuring: DTYPE=FLOP/s (float64, float32, "
        "tf32, float16, bfloat16, fp8, int8) or bandwidth=byte/s, e.g. --set float32=1.2e12 "
        "--set bandwidth=4e10",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


_STATE_KEYS = ("load_before", "load_after", "cpus", "threads", "busy_limit", "busy")


def _measured_fields(item: dict[str, Any] | None, cpu: bool) -> dict[str, Any]:
    """A row's measured value, how, and (CPU) the machine's load at measurement."""
    from perfsuite.ceilings.load import load_text

    item = item or {}
    out = {k: item.get(k) for k in ("value", "mode", "detail", "kernel")}
    out["measured"] = out.pop("value")
    out["tries"] = item.get("tries", 1) if item else 0
    out["other_kernels"] = item.get("other_kernels") or {}
    out["cached"] = bool(item) and item.get("cached", True)
    if cpu:
        out.update({k: item.get(k) for k in _STATE_KEYS})
        out["load"] = load_text(item) if item else None
    return out


def software_note(dtype: str) -> str | None:
    """Why a CPU's bf16/fp16 matmul rate is no roof: without the instructions, operands are
    converted and multiplied in float32 (the roofline judges such runs by fp32); else None."""
    from perfsuite.hostinfo import native_on_cpu

    if native_on_cpu(dtype) is not False:
        return None
    return f"software: this CPU has no native {dtype} instructions; not a hardware ceiling"


def _rows(
    result: dict[str, Any], spec: dict[str, Any] | None, dtypes: list[str], cpu: bool
) -> list[dict]:
    from perfsuite.devices.specs import spec_bandwidth, spec_flops

    meas, user = result["measured"], result["user"]
    rows = []
    for dt in dtypes:
        rows.append(
            {
                "quantity": f"peak {dt}",
                "unit": "FLOP/s",
                **_measured_fields(meas["flops"].get(dt), cpu),
                "user": user.get(dt),
                "spec": spec_flops(spec, dt),
                "software": software_note(dt) if cpu else None,
            }
        )
    rows.append(
        {
            "quantity": "memory bandwidth",
            "unit": "byte/s",
            **_measured_fields(meas.get("bandwidth"), cpu),
            "user": user.get("bandwidth"),
            "spec": spec_bandwidth(spec),
            "software": None,
        }
    )
    for r in rows:
        ref = r["spec"] or r["user"]
        r["measured_over_spec"] = r["measured"] / ref if r["measured"] and ref else None
    return rows


def run(args: argparse.Namespace) -> int:
    from perfsuite.ceilings import cache_path, device_spec, normalize_device, parse_setting
    from perfsuite.ceilings.measure import measurable_dtypes
    from perfsuite.devices.specs import DTYPES, normalize_dtype

    try:
        device = normalize_device(args.device)
        settings = dict(parse_setting(s) for s in args.settings or [])
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    _check_torch(args, device)
    dtypes = [normalize_dtype(d) for d in (args.dtype or measurable_dtypes(device))]
    bad = [d for d in dtypes if d not in measurable_dtypes(device)]
    if bad and not settings:
        raise CLIError(
            f"--dtype {bad[0]}: not measurable on {device} "
            f"(measurable: {', '.join(measurable_dtypes(device))})"
        )
    result = _store(device, settings) if settings else _measure(device, dtypes, args)
    name = result["device_name"]
    cpu = not device.startswith("cuda")
    spec = _cpu_spec(name) if cpu else device_spec(device, name)
    shown = [d for d in dtypes if d in measurable_dtypes(device)]
    shown += [k for k in result["user"] if k in DTYPES and k not in shown]
    rows = _rows(result, spec, shown, cpu)
    if args.json:
        print_json(
            {
                "device": device,
                "device_name": name,
                "host": result["host"],
                "env": result["env"],
                "cache": str(cache_path()),
                "spec_id": spec["id"] if spec else None,
                "spec_source": spec["source"] if spec else None,
                "rows": rows,
                "warnings": result.get("warnings", []),
            }
        )
        return 0
    _print_text(device, result, spec, rows)
    return 0


def _check_torch(args: argparse.Namespace, device: str) -> None:
    """CLIError unless torch is there for `--threads` and a CUDA device for `--device cuda`;
    sets torch's thread count for `--threads`."""
    if args.threads:
        try:
            import torch
        except ImportError:
            raise CLIError("--threads needs torch, which is not installed") from None
        torch.set_num_threads(args.threads)
    if device.startswith("cuda"):
        try:
            import torch
        except ImportError:
            raise CLIError("--device cuda needs torch, which is not installed") from None
        if not torch.cuda.is_available():
            raise CLIError(f"--device {args.device}: no CUDA device is available")


def _store(device: str, settings: dict[str, float]) -> dict[str, Any]:
    """Store the user's `--set` values for `device` (a warning for an implausible one) and
    give the device's cached ceilings read back, measuring nothing new."""
    from perfsuite.ceilings import cache_path, device_name, measure_device, set_user_values
    from perfsuite.ceilings.resolve import implausible_setting

    for key, value in settings.items():
        if warning := implausible_setting(key, value):
            status(f"warning: {warning}")
    set_user_values(device, settings)
    status(f"stored {', '.join(sorted(settings))} for {device_name(device)} in {cache_path()}")
    return measure_device(device, [], bandwidth=False)


def _measure(device: str, dtypes: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Measure the ceilings of `dtypes` and the bandwidth on `device` in one session (the load
    is read once before the first benchmark, see ceilings.load), with a bar per test."""
    from tqdm import tqdm

    from perfsuite.ceilings import measure_device
    from perfsuite.ceilings.measure import flop_kernels

    tests = sum(len(flop_kernels(device, d)) for d in dtypes) + 1
    bar = tqdm(total=tests, desc="peaks", unit="test", leave=False)

    def step(what: str) -> None:
        bar.set_postfix_str(what)
        bar.update(1)

    mode = "quick" if args.quick else "thorough"
    result = measure_device(device, dtypes, mode=mode, refresh=args.refresh, progress=step)
    bar.close()
    return result


def _print_text(
    device: str, result: dict[str, Any], spec: dict[str, Any] | None, rows: list[dict[str, Any]]
) -> None:
    """The ceilings table, then where the spec, software roofs and cache come from."""
    from perfsuite import fmt
    from perfsuite.ceilings import cache_path
    from perfsuite.devices.roofs import env_text

    cpu = not device.startswith("cuda")
    print(f"{result['device_name']} ({device}) on {result['host']}, {env_text(result['env'])}")
    table_rows = [
        [
            r["quantity"] + (" (software)" if r.get("software") else ""),
            fmt.si(r["measured"], r["unit"]),
            _by_cell(r),
            r["mode"] or "",
            _state_cell(r),
            fmt.si(r["spec"], r["unit"]) if r["spec"] else "",
            fmt.si(r["user"], r["unit"]) if r["user"] else "",
            fmt.pct(r["measured_over_spec"]) if r["measured_over_spec"] else "",
        ]
        for r in rows
    ]
    headers = ["ceiling", "measured (best)", "by", "mode", "load at measurement", "spec"]
    headers += ["user-set", "measured/ref"]
    print(fmt.table(table_rows, headers, align="lllllrrr"))
    for r in rows:
        if r.get("software"):
            print(f"{r['quantity']}: {r['software']}")
    if spec and cpu:
        print(f"spec: {spec['source']}")
    elif spec:
        print(f"spec: {spec['source']} (entry {spec['id']}; dense, no sparsity)")
    else:
        print("spec: this device is not in the spec table")
    if cpu:
        print("your own values: --set DTYPE=FLOP/s --set bandwidth=byte/s (the user-set column)")
    print(f"cache: {cache_path()}")


def _state_cell(row: dict[str, Any]) -> str:
    """Short: '0.12->0.31 /2 CPUs, 2 thr' (before->after), ', BUSY' when busy."""
    if row.get("measured") is None or "load" not in row:
        return ""
    if row.get("load_before") is None:
        return "not recorded (old cache)" if row.get("cpus") is None else "unknown (no loadavg)"
    after = row.get("load_after")
    text = f"{row['load_before']:.2f}" + (f"->{after:.2f}" if after is not None else "")
    text += f" /{row['cpus']} CPUs, {row['threads']} thr"
    return text + (", BUSY" if row.get("busy") else ", quiet")


def _cpu_spec(name: str) -> dict[str, Any]:
    """The CPU's spec at the thread count the peaks were measured with."""
    from perfsuite.ceilings.cpuspec import this_cpu_spec

    try:
        import torch

        threads: int | None = torch.get_num_threads()
    except ImportError:
        threads = None
    return this_cpu_spec(name, threads)


def _by_cell(row: dict[str, Any]) -> str:
    """What measured the row's best ("conv", "matmul"), the other benchmarks' values, and how
    many readings it is the best of."""
    if not row.get("measured"):
        return ""
    from perfsuite import fmt

    others = ", ".join(
        f"{k} {fmt.si(v, row['unit'])}" for k, v in (row.get("other_kernels") or {}).items()
    )
    tries = f"best of {row['tries']}" if row.get("tries", 1) > 1 else ""
    parts = [p for p in (others and f"vs {others}", tries) if p]
    return f"{row.get('kernel') or 'copy'}{' (' + '; '.join(parts) + ')' if parts else ''}"
