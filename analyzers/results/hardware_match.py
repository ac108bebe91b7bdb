"""Whether a record's hardware is the hardware of a price table entry: the check that keeps a
measured time from being priced as another machine (perfsuite.analyzers.results.cost.find_price).

Hardware names come as device names ("NVIDIA Tesla V100-SXM2-16GB") and as free text ("8 V100
(AWS p3.16xlarge)"); this module reads the accelerator's model and count out of both and says
whether two of them are the same hardware. Pure, torch-free.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from perfsuite.devices.accelerators import accelerator, devices_used, is_count

VENDOR_WORDS = frozenset({"nvidia", "tesla", "geforce", "amd", "instinct", "radeon"})
# An accelerator model in a hardware name, with the count written before it where there is
# one: "V100" in "Tesla V100-SXM2-16GB", "8 V100 (AWS p3.16xlarge)", "8xA100-SXM4-80GB",
# "4 x GTX 1080 Ti"; "T4", "A10G", "L40S", "MI250X". Not a word inside an instance type
# (`p3` of "p3.16xlarge", `v2` of "ND40s_v2"), nor memory ("61 GB") or "SXM2".
_MODEL = re.compile(
    r"(?<![a-z0-9._])(?:(\d+)(?:\s*[x*×]\s*|\s+)(?:(?:nvidia|tesla|geforce|gtx|rtx)\s+)*)?"
    r"([a-z]{1,2}\d{1,4}[a-z]{0,2}|\d{3,4})(?![a-z0-9._])"
)


def _model(name: Any) -> str:
    """An accelerator's name for comparison: `NVIDIA Tesla V100-SXM2-16GB` and
    `Tesla V100-SXM2-16GB` both read `v100sxm216gb` (vendor words, case, punctuation aside)."""
    return "".join(_words(name))


def _words(name: Any) -> list[str]:
    words = re.findall(r"[a-z0-9]+", str(name).lower())
    return [w for w in words if w not in VENDOR_WORDS]


def _models(name: Any) -> list[tuple[str, int | None]]:
    """(model, count written before it, or None) of each accelerator model in the name."""
    found = _MODEL.finditer(str(name or "").lower())
    return [(m.group(2), int(m.group(1)) if m.group(1) else None) for m in found]


def _variant(name: Any) -> dict[str, str]:
    """Memory size and form factor of a device name that starts with its model
    (`Tesla V100-SXM2-16GB`: 16gb, sxm); none for free text, whose sizes may be the host's
    ("1 V100 / 61 GB / 8 CPU")."""
    words, models = _words(name), _models(name)
    if not words or not models or words[0] != models[0][0]:
        return {}
    out = {}
    for w in words[1:]:
        if re.fullmatch(r"\d+gb", w):
            out["memory"] = w
        elif w.startswith("sxm") or w in ("pcie", "nvl"):
            out["form"] = "sxm" if w.startswith("sxm") else w
    return out


def instance_mismatch(
    record: Mapping[str, Any],
    instance_type: str,
    entry: Mapping[str, Any],
    recorded: bool = False,
) -> str | None:
    """Why the record cannot be priced at `instance_type`, or None.

    The rule of `measured_elsewhere`: a measured figure is priced only at the hardware that
    measured it. The price table's `hardware` of the instance is compared with the record's
    wherever both say (`_compare`): the accelerator kind (cpu, cuda, tpu), and for
    accelerators the model and the count. CPU models are not compared (the table's CPU
    instances name several possible processors), nor anything for an entry without
    `hardware` (a user price file).

    `recorded`: the type is the record's own `hardware.instance_type`, refused only where its
    hardware is other than the table's. A type given on the command line must be shown to be
    the record's hardware: where the kind, model or count cannot be read, it is refused too
    ("hardware unknown: cannot check ...").
    """
    want = entry.get("hardware")
    if not isinstance(want, Mapping) or not want.get("accelerator"):
        return None
    have = record.get("hardware") or {}
    count = devices_used(record)
    verdict, unread = _compare(have, count, want)
    if verdict == "same" or (verdict == "unknown" and recorded):
        return None
    there = f"{_label(want, want.get('count'), instance_type)} ({want['accelerator']})"
    if verdict == "unknown":
        return (
            f"hardware unknown: cannot check that {instance_type} is the hardware it ran on "
            f"({unread}; {instance_type} is {there}): --instance-type {instance_type} not used"
        )
    which = "recorded instance type" if recorded else "--instance-type"
    kind = have.get("accelerator") or accelerator(have.get("name"))
    return (
        f"{which} {instance_type} not used: the run was measured on "
        f"{_label(have, count, 'unknown hardware')} ({kind}), {instance_type} is {there}: a "
        "measured time is priced only on the hardware it ran on"
    )


def _compare(
    have: Mapping[str, Any], count: int | None, want: Mapping[str, Any]
) -> tuple[str, str | None]:
    """("same" | "other" | "unknown", what could not be read): a record's hardware (`count`
    accelerators, `devices_used`) against a price table entry's, wherever both say.

    - kind: the record's `accelerator`, else read from its name by the DAWNBench importer's
      rule (`devices.accelerators.accelerator`: "8 V100 (AWS p3.16xlarge)" is cuda);
    - model: the table name's model word (`V100` of "NVIDIA Tesla V100-SXM2-16GB") must be
      the record name's (`_models`: "Tesla V100-SXM2-16GB", "8 V100 (AWS p3.16xlarge)"), and
      where both names are device names, their memory and form factor agree where both say;
    - count: `count`, else the number written before the model ("8 V100"), is the table's.
    """
    name, want_name = have.get("name"), want.get("name")
    kind = have.get("accelerator") or accelerator(name)
    if not kind:
        return "unknown", (
            f"no accelerator kind in its hardware name {name!r}" if name else "no hardware named"
        )
    if kind != want["accelerator"]:
        return "other", None
    if kind == "cpu" or not want_name:
        return "same", None
    want_model = next(iter(_models(want_name)), (None, None))[0]
    if want_model is None:  # a table name without a model word: the names must agree
        return ("other" if name and _model(name) != _model(want_name) else "same"), None
    found = _models(name)
    written = [n for model, n in found if model == want_model]
    if not written:
        if found:
            return "other", None
        return "unknown", (
            f"no accelerator model in its hardware name {name!r}" if name else "no model named"
        )
    mine, theirs = _variant(name), _variant(want_name)
    if any(mine[k] != theirs[k] for k in mine.keys() & theirs.keys()):
        return "other", None
    want_count = want.get("count")
    if not is_count(want_count):
        return "same", None
    n = count if count is not None else written[0]
    if n is None:
        return "unknown", f"it does not say how many {want_model.upper()} it used"
    return ("same" if n == want_count else "other"), None


def _label(hw: Mapping[str, Any], count: Any, default: str) -> str:
    """ "NVIDIA V100 x8": a hardware section's name, with its count above one."""
    name = str(hw.get("name") or default)
    return f"{name} x{count}" if is_count(count) and count > 1 else name
