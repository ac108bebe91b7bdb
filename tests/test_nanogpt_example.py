"""examples/nanogpt_loop.py, the shape of a real user's script (a tied-head GPT, gradient
accumulation, clipping, a hand-written learning rate, two AdamW groups, the evaluation at the
top of one long epoch's body), run for a few iterations under perfsuite.track."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from perfsuite.record import load_record  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_nanogpt_style_loop_is_numbered_counted_and_replayed_after_the_loop(tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import nanogpt_loop as ex
    finally:
        sys.path.remove(str(EXAMPLES))
    run_dir = ex.main(None, str(tmp_path), iters=4, eval_interval=2, measure_peaks=False,
                      profile_steps=1)  # fmt: skip
    rec = load_record(Path(run_dir) / "run.json")
    assert rec["status"] == "not_reached"
    evals = rec["evaluations"]
    assert [e["epoch"] for e in evals] == [0.0, 0.5, 1.0]  # the top of the body: steps before
    assert "train_loss" not in evals[0] and evals[1]["train_loss"] > 0
    work = rec["work"]
    assert work["counted_on"]["call"] == 4 and work["batch_size"] == ex.BATCH * ex.ACCUM
    assert work["counted_on"]["shapes"] == [[ex.ACCUM, ex.BATCH, ex.BLOCK]] * 2
    assert rec["timeline"]["batch"]["call"] == 4  # after the loop, on the last call
    assert rec["model_flops"]["per_token"]["value"] > 0
    assert not [f for f in rec["flags"] if "outside" in f or "global" in f]
    assert ex.learning_rate(0, 100) < ex.learning_rate(ex.WARMUP, 100) == pytest.approx(ex.LR)
    assert ex.learning_rate(100, 100) == pytest.approx(ex.MIN_LR)
    groups = ex.optimizer_groups(ex.GPT(5))
    assert [g["weight_decay"] for g in groups] == [ex.DECAY, 0.0]
    assert all(p.dim() >= 2 for p in groups[0]["params"])
