"""TensorFlow profiler output (XSpace protobuf, `*.xplane.pb`) -> the Chrome-trace JSON the
timeline analyzer reads, plus per-op aggregates for the record's `timeline` section.

The file is parsed with TensorFlow's own generated protobuf class (`xplane_pb2`), never
unpickled. Kept from the host plane (`/host:CPU`): every TensorFlow op event (named
`scope/name:OpType` by the executor) as a `cpu_op` range named by its graph op type (a
oneDNN or Grappler kernel such as `_MklNativeConv2D` by the op it runs, `Conv2D`), so per-op
times join the `work` section's per-op FLOPs by name, and the step markers
(`tf.profiler.experimental.Trace("train", step_num=N)`) as `ProfilerStep#N` annotations.
Executor and thread-pool bookkeeping events are dropped. Device planes (`/device:GPU:N`) are
not converted: their kernels carry no launch correlation the analyzer could use; the
conversion says so in `notes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfsuite.runner.engine.profile_window import cvs_per_step

STEP_EVENT = "train"
# oneDNN's kernel prefixes (TF_ENABLE_ONEDNN_OPTS, on by default on x86 CPUs with AVX-512
# VNNI, bf16 or AMX): `_MklNativeConv2D` runs the graph's `Conv2D`. The FLOP count reads the
# traced graph before any rewrite, so a timeline op is named by the graph op it runs.
ONEDNN_PREFIXES = ("_MklNative", "_Mkl")
# Fused kernels (oneDNN's, or Grappler's `_FusedMatMul` and kin) are named by their main op;
# a fused bias or activation keeps its FLOPs under its own graph name, its time in this row.
FUSED_MAIN_OP = {
    "FusedConv2D": "Conv2D",
    "FusedMatMul": "MatMul",
    "FusedBatchNormEx": "FusedBatchNormV3",
    "FusedDepthwiseConv2dNative": "DepthwiseConv2dNative",
    "FusedBatchMatMulV2": "BatchMatMulV2",
}


def _rewritten(kernel_op: str) -> str | None:
    """The op a rewritten kernel's name carries (`_MklNativeFusedMatMul` -> `FusedMatMul`,
    `_FusedConv2D` -> `FusedConv2D`), or None for a kernel named by its graph op."""
    for prefix in ONEDNN_PREFIXES:
        if kernel_op.startswith(prefix) and len(kernel_op) > len(prefix):
            return kernel_op[len(prefix) :]
    return kernel_op[1:] if kernel_op[:1] == "_" and kernel_op[1:] in FUSED_MAIN_OP else None


def graph_op_type(kernel_op: str) -> str:
    """The graph op type a rewritten kernel runs: `_MklNativeConv2D` -> `Conv2D`,
    `_MklNativeFusedMatMul` and `_FusedMatMul` -> `MatMul`; other names (`_Send`) unchanged."""
    base = _rewritten(kernel_op)
    return kernel_op if base is None else FUSED_MAIN_OP.get(base, base)


def xplane_pb2() -> Any:
    """TensorFlow's generated XSpace protobuf module (TF >= 2.12 ships it under tsl)."""
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2 as mod
    except ImportError:
        from tsl.profiler.protobuf import xplane_pb2 as mod  # type: ignore[no-redef]
    return mod


def read_xspace(path: Path) -> Any:
    """Parse one `*.xplane.pb` file (protobuf, no pickle); one-line ValueError if unreadable."""
    space = xplane_pb2().XSpace()
    try:
        space.ParseFromString(Path(path).read_bytes())
    except Exception as exc:  # protobuf's DecodeError and OSError alike
        raise ValueError(f"{path}: not a readable XSpace protobuf: {exc}") from None
    return space


def _stats(plane: Any, stats: Any) -> dict[str, Any]:
    out = {}
    for s in stats:
        name = (
            plane.stat_metadata[s.metadata_id].name if s.metadata_id in plane.stat_metadata else ""
        )
        kind = s.WhichOneof("value")
        value = getattr(s, kind) if kind else None
        if kind == "ref_value":
            ref = plane.stat_metadata.get(value)
            value = ref.name if ref is not None else value
        out[name] = value
    return out


def to_chrome_trace(space: Any) -> dict[str, Any]:
    """{"traceEvents": [...], "notes": [...]} from an XSpace message (times in microseconds)."""
    events: list[dict[str, Any]] = []
    notes: list[str] = []
    renamed: dict[str, str] = {}
    tids: dict[int, int] = {}
    for plane in space.planes:
        if plane.name.startswith("/device:"):
            notes.append(f"{plane.name}: device plane not converted (no launch correlation)")
            continue
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            tid = tids.setdefault(line.id, len(tids) + 1)
            events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid,
                           "args": {"name": line.display_name or line.name}})  # fmt: skip
            for ev in line.events:
                meta = plane.event_metadata.get(ev.metadata_id)
                name = meta.name if meta is not None else ""
                ts = line.timestamp_ns / 1e3 + ev.offset_ps / 1e6
                dur = ev.duration_ps / 1e6
                if name == STEP_EVENT:
                    step = _stats(plane, ev.stats).get("step_num", len(events))
                    mark = f"ProfilerStep#{step}"
                    events.append({"ph": "X", "cat": "user_annotation", "pid": 0, "tid": tid,
                                   "name": mark, "ts": ts, "dur": dur})  # fmt: skip
                elif ":" in name and "::" not in name:
                    full, _, kernel_op = name.rpartition(":")
                    if not kernel_op or " " in kernel_op:
                        continue
                    op_type = graph_op_type(kernel_op)
                    args = {"tf_op": full}
                    if op_type != kernel_op:
                        args["tf_kernel"] = kernel_op
                        renamed[kernel_op] = op_type
                    events.append({"ph": "X", "cat": "cpu_op", "pid": 0, "tid": tid,
                                   "name": op_type, "ts": ts, "dur": dur,
                                   "args": args})  # fmt: skip
    events.sort(key=lambda e: (e.get("ts", -1.0), -e.get("dur", 0.0)))
    if renamed:
        pairs = ", ".join(f"{k} as {v}" for k, v in sorted(renamed.items()))
        fused = any(_rewritten(k) in FUSED_MAIN_OP for k in renamed)
        notes.append(
            f"rewritten kernels named by the graph op they run (oneDNN or Grappler): {pairs}"
            + ("; a fused kernel's time includes its fused bias or activation" if fused else "")
        )
    return {"traceEvents": events, "notes": notes, "displayTimeUnit": "ms"}


def op_rows(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Per op type over the window, in the record's `timeline.ops` form (host times; TensorFlow
    CPU op events do not nest, so self time equals total time)."""
    rows: dict[str, dict[str, Any]] = {}
    steps, items = [], []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if e["cat"] == "user_annotation":
            steps.append((e["ts"], e["ts"] + e["dur"]))
            continue
        seconds = e["dur"] / 1e6
        row = rows.setdefault(e["name"], {"op": e["name"], "calls": 0, "self_time_s": 0.0,
                                          "total_time_s": 0.0, "device_time_s": None,
                                          "device_total_time_s": None})  # fmt: skip
        row["calls"] += 1
        row["self_time_s"] += seconds
        row["total_time_s"] += seconds
        items.append((e["name"], e["ts"], seconds))
    cvs = cvs_per_step(steps, items)
    for name, row in rows.items():
        row["step_cv"] = cvs.get(name)
    return sorted(rows.values(), key=lambda r: -r["self_time_s"])
