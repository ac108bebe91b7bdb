"""What the reader knows of Nsight Systems' SQLite export (`nsys export --type sqlite`).

Every fact here was checked on two real exports (../shared/data/nsys, PROVENANCE.md there):
nsys 2022.2.1 writing export schema 2.9.1 and nsys 2024.5.1 writing schema 3.13.2. The
reader accepts schema majors 2 and 3; a newer major is refused rather than misread.

- Times (start, end) are integer nanoseconds from the capture's start (schema 2.9.1, 3.13.2).
- Names are ids into StringIds: kernels' demangledName, runtime calls' nameId, NVTX ranges'
  textId when the text was registered (else the `text` column) (2.9.1, 3.13.2).
- Runtime call names carry the API version as a suffix (`cudaLaunchKernel_v7000`) in both
  schemas; the suffix is dropped so the names read as in a Kineto trace.
- A kernel or copy and the runtime call that launched it share `correlationId` within one
  process; the process id is (globalPid or globalTid >> 24) & 0xFFFFFF, the thread id
  globalTid & 0xFFFFFF (2.9.1, 3.13.2).
- The export's metadata table is EXPORT_META_DATA in 2.9.1 and META_DATA_EXPORT in 3.13.2;
  both hold EXPORT_PRODUCT_VERSION and EXPORT_SCHEMA_VERSION.
- copyKind and the srcKind/dstKind memory kinds follow ENUM_CUDA_MEMCPY_OPER and
  ENUM_CUDA_MEM_KIND of the 3.13.2 export (2.9.1 has no ENUM tables; its values agree on
  the kinds it holds: HtoD 1 Pageable -> Device 2, DtoH 2 Device -> Pageable).
- NVTX_EVENTS eventType 59 is a push/pop range and 60 a start/end range (ENUM_NSYS_EVENT_TYPE
  of 3.13.2; the 2.9.1 file's ranges are all 59); 70/71 are their NVTX-text (nvtxt)
  counterparts. A range with no `end` never closed.
- TARGET_INFO_GPU gives per device: name, smCount, clockRate (Hz), memoryBandwidth (B/s),
  totalMemory (B), computeMajor/Minor (2.9.1, 3.13.2).
"""

from __future__ import annotations

SQLITE_MAGIC = b"SQLite format 3\x00"
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
KNOWN_SCHEMA_MAJORS = (2, 3)
CHECKED_ON = "nsys 2022.2.1 (schema 2.9.1) and nsys 2024.5.1 (schema 3.13.2)"

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
GPU_INFO = "TARGET_INFO_GPU"
DEVICE_TABLES = (KERNEL, MEMCPY, MEMSET)

# Columns each table must have for the reader to use it.
REQUIRED = {
    KERNEL: ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName"),
    MEMCPY: (
        "start",
        "end",
        "deviceId",
        "streamId",
        "correlationId",
        "globalPid",
        "bytes",
        "copyKind",
    ),
    MEMSET: ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"),
    RUNTIME: ("start", "end", "globalTid", "correlationId", "nameId"),
    SYNC: ("start", "end", "deviceId", "streamId"),
    NVTX: ("start", "end", "eventType", "globalTid", "text"),
}

# ENUM_CUDA_MEMCPY_OPER: copyKind -> the short kind Kineto names copies by.
COPY_KINDS = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "Unified HtoD",
    12: "Unified DtoH",
    13: "Unified DtoD",
}
# ENUM_CUDA_MEM_KIND
MEMORY_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}
NVTX_RANGE_TYPES = (59, 60, 70, 71)


def copy_name(kind: int, src: int | None, dst: int | None) -> str:
    """A copy's name as a Kineto trace writes it: `Memcpy HtoD (Pageable -> Device)`."""
    text = f"Memcpy {COPY_KINDS.get(kind, f'kind {kind}')}"
    if src is not None and dst is not None and src >= 0 and dst >= 0:
        text += f" ({MEMORY_KINDS.get(src, src)} -> {MEMORY_KINDS.get(dst, dst)})"
    return text


def memset_name(kind: int | None) -> str:
    """A memset's name as Kineto writes it: `Memset (Device)`."""
    return f"Memset ({MEMORY_KINDS.get(kind, 'Unknown') if kind is not None else 'Unknown'})"


def runtime_name(name: str) -> str:
    """`cudaLaunchKernel_v7000` -> `cudaLaunchKernel`: the API version suffix dropped."""
    head, sep, tail = name.rpartition("_v")
    return head if sep and head and tail.isdigit() else name


def pid_of(global_id: int) -> int:
    return (global_id >> 24) & 0xFFFFFF


def tid_of(global_tid: int) -> int:
    return global_tid & 0xFFFFFF
