"""The threshold model: the weights that first met the run's threshold, kept in the run folder.

Later analysis (`perfsuite eval shift|probe`) must judge the model that the time to accuracy
was measured for, not whatever the last epoch left (with `--keep-going` those differ). Only the
state dict is saved (`torch.save`), written atomically (temporary file in the run folder,
fsync, rename), and described in the record's `checkpoint` section with its size and SHA-256.
Loading checks that description before `torch.load(..., weights_only=True)`, which rebuilds
tensors only and never runs pickled code.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfsuite.record import RecordError

CHECKPOINT_NAME = "threshold_model.pt"
FORMAT = "torch.save(state_dict), load with weights_only=True"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_threshold_model(
    run_dir: str | os.PathLike[str],
    module: Any,
    *,
    epoch: float,
    evaluation_index: int,
    metric: str,
    value: float,
) -> dict[str, Any]:
    """Write `module`'s state dict (on the CPU) atomically; returns the record's section."""
    import torch

    target = Path(run_dir) / CHECKPOINT_NAME
    state = {k: v.detach().to("cpu") for k, v in module.state_dict().items()}
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {
        "file": target.name,
        "size_bytes": target.stat().st_size,
        "sha256": _sha256(target),
        "format": FORMAT,
        "epoch": epoch,
        "evaluation_index": evaluation_index,
        "metric": metric,
        "value": value,
    }


def checkpoint_path(record: Mapping[str, Any]) -> Path:
    """The checkpoint file of a loaded record; one-line RecordError when there is none."""
    origin = record.get("_path", "<record>")
    section = record.get("checkpoint")
    if not section:
        raise RecordError(
            f"{origin}: field checkpoint: missing (the run never met its threshold, or was "
            "recorded before threshold checkpoints existed)"
        )
    name = str(section.get("file", ""))
    if not name or Path(name).name != name:
        raise RecordError(f"{origin}: field checkpoint.file: {name!r} is not a plain file name")
    return Path(record.get("_dir", ".")) / name


def load_threshold_model(record: Mapping[str, Any]) -> dict[str, Any]:
    """The threshold model's state dict, after checking its size and SHA-256 against the
    record (a truncated or swapped file is refused, naming the file and the field)."""
    import torch

    path = checkpoint_path(record)
    section = record["checkpoint"]
    if not path.is_file():
        raise RecordError(f"{path}: field checkpoint.file: file not found")
    size = path.stat().st_size
    if size != section.get("size_bytes"):
        raise RecordError(
            f"{path}: field checkpoint.size_bytes: file has {size} bytes, the record says "
            f"{section.get('size_bytes')}"
        )
    if section.get("sha256") and _sha256(path) != section["sha256"]:
        raise RecordError(f"{path}: field checkpoint.sha256: file content does not match")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a bad file
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RecordError(f"{path}: field checkpoint.file: cannot load: {first}") from None
    if not isinstance(state, dict):
        raise RecordError(f"{path}: field checkpoint.file: not a state dict")
    return state
