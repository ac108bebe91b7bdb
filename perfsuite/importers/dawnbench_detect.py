"""What a DAWNBench entry is: its task, training or inference, and its accelerator kind.

These are read from where the file sits and what it holds, so each has a rule worth keeping
in one place. Folders count only at the positions of the public repository's layout,
`<Task>/<train|inference>/<entry>.json` (the parent and grandparent): a folder higher up
(`~/imagenet/mine/x.json`, `inference/CIFAR10/train/x.json`) says nothing about the entry.
Where the folder says nothing, or the entry's own fields contradict it, the fields decide,
and a contradiction is returned as a note for the record's flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.devices.accelerators import accelerator
from perfsuite.importers.common import ImportFailure


@dataclass(frozen=True)
class Task:
    """A DAWNBench task: its record name, the columns of its TSV and its threshold rule."""

    name: str
    dataset: str
    metric: str  # record metric compared with the threshold
    threshold: float  # fraction
    columns: dict[str, str]  # TSV/JSON accuracy field -> record metric
    percent: frozenset[str]  # fields given in percent


TASKS: dict[str, Task] = {
    "cifar10": Task(
        "cifar10", "CIFAR10", "top1", 0.94, {"top1Accuracy": "top1"}, frozenset({"top1Accuracy"})
    ),
    "imagenet": Task(
        "imagenet",
        "ImageNet",
        "top5",
        0.93,
        {"top1Accuracy": "top1", "top5Accuracy": "top5"},
        frozenset({"top1Accuracy", "top5Accuracy"}),
    ),
    "squad": Task("squad", "SQuAD v1.1", "f1", 0.75, {"f1Score": "f1"}, frozenset()),
}
_PATH_NAMES = {
    "cifar10": "cifar10",
    "cifar-10": "cifar10",
    "imagenet": "imagenet",
    "squad": "squad",
}
_KIND_FOLDERS = {"train": "training", "inference": "inference"}
# accuracy field -> task, in the order the fields decide (top1Accuracy is ImageNet's too)
_FIELD_TASKS = {"f1Score": "squad", "top5Accuracy": "imagenet", "top1Accuracy": "cifar10"}
INFERENCE_FIELDS = ("latency", "cost")  # DAWNBench asks an inference entry for one of them


def folder_kind(path: Path) -> str | None:
    """The entry type its own folder names (`train/` -> "training", `inference/`), or None."""
    return _KIND_FOLDERS.get(path.parent.name.lower())


def folder_task(path: Path) -> Task | None:
    """The task named by the `<Task>/` folder: the grandparent under `train/`/`inference/`,
    else the parent (a flat `CIFAR10/x.json`); no other folder counts."""
    parent = path.parent
    named = parent.parent.name if parent.name.lower() in _KIND_FOLDERS else parent.name
    key = _PATH_NAMES.get(named.lower())
    return TASKS[key] if key else None


def entry_kind(path: Path, entry: dict[str, Any], tsv: Path) -> tuple[bool, str | None]:
    """(is inference, note) from the folder and the fields: `latency`/`cost` say inference, a
    TSV beside the entry says training. Mixed or no evidence: the folder decides (training when
    it says nothing, unless inference fields are present); fields that contradict it win."""
    inf_fields = "/".join(f for f in INFERENCE_FIELDS if f in entry)
    has_tsv = tsv.exists()
    folder = folder_kind(path)
    where = f"{path.name}: its folder {path.parent.name}/ says {folder} but it"
    if inf_fields and has_tsv:
        inference = folder != "training"
        unread = tsv.name if inference else inf_fields
        return inference, (
            f"{path.name}: has {inf_fields} and {tsv.name} beside it; read as "
            f"{'inference' if inference else 'training'} ({unread} not read)"
        )
    if inf_fields:
        if folder == "training":
            return True, f"{where} has {inf_fields} and no {tsv.name}; read as inference"
        return True, None
    if has_tsv and folder == "inference":
        return False, f"{where} has no latency or cost field and has {tsv.name}; read as training"
    return folder == "inference", None


def detect_task(
    path: Path, entry: dict[str, Any], header: list[str] | None
) -> tuple[Task, str | None]:
    """The task from the `<Task>/` folder unless the accuracy fields (entry and TSV header)
    belong to another task; else from those fields. Returns the task and a note when the
    fields overruled the folder."""
    fields = [f for f in _FIELD_TASKS if f in entry or f in (header or ())]
    by_fields = TASKS[_FIELD_TASKS[fields[0]]] if fields else None
    folder = folder_task(path)
    if folder is None:
        if by_fields is None:
            raise ImportFailure(
                f"{path}: field task: cannot tell CIFAR10/ImageNet/SQuAD from the folders or the "
                "fields (put it in a <Task>/<train|inference>/ folder such as CIFAR10/train/)"
            )
        return by_fields, None
    if by_fields is None or by_fields == folder or _fits(folder, fields, header):
        return folder, None
    return by_fields, (
        f"{path.name}: its folder says {folder.dataset} but its accuracy fields "
        f"({', '.join(fields)}) are {by_fields.dataset}'s; read as {by_fields.dataset}"
    )


def _fits(task: Task, fields: list[str], header: list[str] | None) -> bool:
    """No accuracy field of another task, and (training) every column the task reads."""
    if any(f not in task.columns for f in fields):
        return False
    return header is None or all(c in header for c in task.columns)


def hardware(text: Any) -> dict[str, Any]:
    """The free-text hardware string, with the accelerator kind when it is named in it."""
    name = None if text is None else str(text)
    return {"name": name, "accelerator": accelerator(name), "count": None, "instance_type": None}
