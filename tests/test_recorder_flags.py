"""Keyed flags: `Recorder.flag(text, key=...)` keeps one flag up to date in place, found by
its text rather than by a list index, so flags added or removed in between (anywhere in the
list) neither lose another flag nor leave stale text; the record keeps plain strings."""

from __future__ import annotations

import json

import pytest

from perfsuite.record import load_record
from perfsuite.runner.record.recorder import Recorder

pytestmark = pytest.mark.usefixtures("private_cache")

TASK = {"name": "t", "metric": "top1", "threshold": 0.5}


def _rec(tmp_path, **kw):
    kw.setdefault("write_files", False)
    return Recorder(tmp_path, "t", TASK, "cpu", {}, framework="x", **kw)


def test_unkeyed_flags_append_as_before(tmp_path):
    rec = _rec(tmp_path)
    rec.flag("a")
    rec.flag("a")
    rec.flag("b")
    assert rec.record["flags"] == ["a", "a", "b"]
    assert not rec.has_flag("a")


def test_a_keyed_flag_is_replaced_where_it_stands(tmp_path):
    rec = _rec(tmp_path)
    flags = rec.record["flags"]
    rec.flag("first")
    rec.flag("k: 1", key="k")
    rec.flag("after")
    rec.flag("k: 2", key="k")
    assert flags == ["first", "k: 2", "after"] and rec.has_flag("k")
    flags.insert(0, "inserted")  # a flag added ahead of it shifts its index
    rec.flag("k: 3", key="k")
    assert flags == ["inserted", "first", "k: 3", "after"]
    flags.remove("inserted")
    flags.remove("first")  # two removed ahead of it: its old index is past the end
    rec.flag("k: 4", key="k")
    assert flags == ["k: 4", "after"]
    rec.flag("other", key="o")
    rec.flag("k: 5", key="k")
    rec.flag("other 2", key="o")
    assert flags == ["k: 5", "after", "other 2"]


def test_a_twin_with_the_same_text_is_left_alone(tmp_path):
    """An unkeyed flag with the keyed flag's exact text (even the same string object) is not
    taken for it: the one nearest to where the keyed flag was is."""
    rec = _rec(tmp_path)
    flags = rec.record["flags"]
    same = "same text"
    rec.flag("a")
    rec.flag(same)
    rec.flag(same, key="k")
    rec.flag("x")
    flags.remove("a")
    rec.flag("new text", key="k")
    assert flags == [same, "new text", "x"]


def test_a_keyed_flag_removed_by_someone_else_comes_back_at_the_end(tmp_path):
    rec = _rec(tmp_path)
    rec.flag("k: 1", key="k")
    rec.flag("b")
    rec.record["flags"].remove("k: 1")
    rec.flag("k: 2", key="k")
    rec.flag("k: 3", key="k")
    assert rec.record["flags"] == ["b", "k: 3"]


def test_the_record_keeps_plain_strings(tmp_path):
    rec = _rec(tmp_path, write_files=True)
    rec.flag("plain")
    rec.flag("keyed: 1", key="secret-key")
    rec.flag("keyed: 2", key="secret-key")
    rec.write()
    assert load_record(rec.run_dir)["flags"] == ["plain", "keyed: 2"]
    assert "secret-key" not in json.dumps(rec.record)
    assert "secret-key" not in (rec.run_dir / "run.json").read_text()


def test_a_tracked_run_keeps_its_flags_up_to_date_around_other_flags(tmp_path):
    """The early-epoch and mid-epoch flags of `perfsuite.track` are updated in place while
    the user's own flags come and go ahead of and after them."""
    torch = pytest.importorskip("torch")
    import perfsuite

    mid = "evaluations inside an epoch of unknown length are numbered by the epoch they fell in"
    tail = (
        "ended early after {} steps: the loop left run.epoch() before its iterable ran out "
        "(time and steps counted as run)"
    )

    def epoch(run, steps: int) -> None:
        batches = (torch.zeros(8, 4) for _ in range(5))  # no len(): mid-epoch flag
        for i, x in enumerate(run.epoch(batches)):
            run.step(lambda x: torch.tensor(1.0), x)
            if i == 0:
                run.evaluate(top1=lambda: 0.1)
            if i == steps - 1:
                break

    out = tmp_path / "runs"
    with perfsuite.track("t", threshold=0.5, capture=False, out=out, progress=False) as run:
        flags = run.record["flags"]
        epoch(run, 2)
        assert flags == [mid, "epoch 1 " + tail.format("2")]
        flags.insert(0, "mine: first")
        epoch(run, 3)
        assert flags == ["mine: first", mid, "epochs 1, 2 " + tail.format("2, 3")]
        flags.remove("mine: first")
        flags.append("mine: last")
        epoch(run, 1)
    assert load_record(run.run_dir)["flags"] == [
        mid,
        "epochs 1, 2, 3 " + tail.format("2, 3, 1"),
        "mine: last",
    ]
