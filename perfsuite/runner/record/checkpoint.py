"""The threshold model: the weights that first met the run's threshold, kept in the run folder.

Later analysis (`perfsuite infer`, `perfsuite eval shift|probe`) must judge the model that the
time to accuracy was measured for, not whatever the last epoch left (with `--all-epochs` those
differ). One module serves both frameworks: the file is written atomically (temporary file in
the run folder, fsync, rename) and described in the record's `checkpoint` section with its size
and SHA-256, which loading checks first. The formats never run code when read: PyTorch runs
keep the state dict (`torch.save`, read with `torch.load(..., weights_only=True)`), TensorFlow
runs keep their variables as named numpy arrays (`np.savez`, read with `allow_pickle=False`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from perfsuite.record import RecordError
from perfsuite.safeio import atomic_binary_writer

CHECKPOINT_NAME = "threshold_model.pt"
FORMAT = "torch.save(state_dict), load with weights_only=True"
ARRAYS_NAME = "threshold_model.npz"
ARRAYS_FORMAT = "numpy .npz of named variables (np.savez), load with allow_pickle=False"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_checkpoint(
    run_dir: str | os.PathLike[str],
    name: str,
    fmt: str,
    write: Callable[[IO[bytes]], None],
    *,
    epoch: float,
    evaluation_index: int,
    metric: str,
    value: float,
) -> dict[str, Any]:
    """`write(fh)` into `run_dir/name` atomically; returns the record's `checkpoint` section."""
    target = Path(run_dir) / name
    with atomic_binary_writer(target) as fh:
        write(fh)
    return {
        "file": target.name,
        "size_bytes": target.stat().st_size,
        "sha256": _sha256(target),
        "format": fmt,
        "epoch": epoch,
        "evaluation_index": evaluation_index,
        "metric": metric,
        "value": value,
    }


def save_threshold_model(run_dir: str | os.PathLike[str], module: Any,
                         **where: Any) -> dict[str, Any]:  # fmt: skip
    """A PyTorch module's state dict (on the CPU); `where`: epoch, evaluation_index, metric,
    value of the evaluation that met the threshold."""
    import torch

    state = {k: v.detach().to("cpu") for k, v in module.state_dict().items()}
    return write_checkpoint(
        run_dir, CHECKPOINT_NAME, FORMAT, lambda fh: torch.save(state, fh), **where
    )


def save_arrays(run_dir: str | os.PathLike[str], arrays: Mapping[str, Any],
                **where: Any) -> dict[str, Any]:  # fmt: skip
    """Named numpy arrays (a TensorFlow model's variables) as an uncompressed .npz."""
    import numpy as np

    plain = {k: np.asarray(v) for k, v in arrays.items()}
    return write_checkpoint(
        run_dir, ARRAYS_NAME, ARRAYS_FORMAT, lambda fh: np.savez(fh, **plain), **where
    )


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


def verified_path(record: Mapping[str, Any]) -> Path:
    """The checkpoint file after its size and SHA-256 match the record (a truncated or swapped
    file is refused, naming the file and the field)."""
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
    return path


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def load_threshold_model(record: Mapping[str, Any]) -> dict[str, Any]:
    """The threshold model's PyTorch state dict, checked (`verified_path`) before loading."""
    import torch

    path = verified_path(record)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a bad file
        raise RecordError(
            f"{path}: field checkpoint.file: cannot load: {_first_line(exc)}"
        ) from None
    if not isinstance(state, dict):
        raise RecordError(f"{path}: field checkpoint.file: not a state dict")
    return state


def load_arrays(
    record: Mapping[str, Any], expected: Mapping[str, tuple[int, ...]]
) -> dict[str, Any]:
    """The named arrays of an .npz checkpoint, checked (`verified_path`), read without pickle,
    and refused unless their names and shapes are exactly `expected` (the rebuilt model's)."""
    import numpy as np

    path = verified_path(record)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as exc:  # zipfile, ValueError (pickled objects), OSError
        raise RecordError(
            f"{path}: field checkpoint.file: cannot load: {_first_line(exc)}"
        ) from None
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        raise RecordError(
            f"{path}: field checkpoint.file: variables do not match the rebuilt model "
            f"(missing {missing or 'none'}, unexpected {extra or 'none'})"
        )
    for k, shape in expected.items():
        if tuple(arrays[k].shape) != tuple(shape):
            raise RecordError(
                f"{path}: field checkpoint.file: variable {k} has shape "
                f"{tuple(arrays[k].shape)}, the rebuilt model {tuple(shape)}"
            )
    return arrays
