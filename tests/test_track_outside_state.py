"""`perfsuite.track` and steps with outside state, and how evaluations are numbered.

- A step that prefetches its next batch into globals (nanoGPT's `global X, Y; X, Y =
  get_batch('train')` inside the step) is refused the detours with a one-line warning naming
  the variables and the way out, and trains bit for bit as without perfsuite.
- Closure cells written with `nonlocal` and iterators reached through globals or cells are
  found too; a step that writes none is not refused.
- An evaluation is numbered by the steps taken before it, at the top or the bottom of the loop
  body, and its `train_loss` is the mean since the previous evaluation, with the epoch's mean so
  far beside it.
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

import perfsuite  # noqa: E402
from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner.engine.outside_state import outside_writes, step_code  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")

GEN = torch.Generator()
X = Y = None
MODEL = OPT = None


def get_batch():
    return torch.randn(8, 4, generator=GEN), torch.randint(0, 3, (8,), generator=GEN)


def prefetching_step():
    """nanoGPT's pattern: train on the batch in the globals, then fetch the next into them."""
    global X, Y
    loss = torch.nn.functional.cross_entropy(MODEL(X), Y)
    X, Y = get_batch()  # the next batch, prefetched while the backward would run on a GPU
    OPT.zero_grad()
    loss.backward()
    OPT.step()
    return loss


def _losses(tmp_path, tracked: bool, steps: int = 6) -> tuple[list[float], torch.Tensor]:
    """The losses of `steps` steps and the batch the globals hold after them."""
    global X, Y, MODEL, OPT
    torch.manual_seed(0)
    GEN.manual_seed(1)
    MODEL = torch.nn.Linear(4, 3)
    OPT = torch.optim.SGD(MODEL.parameters(), lr=0.1)
    X, Y = get_batch()
    if not tracked:
        return [float(prefetching_step().detach()) for _ in range(steps)], X
    out = []
    with perfsuite.track(
        "p", threshold=0.5, model=MODEL, optimizer=OPT, out=tmp_path, measure_peaks=False
    ) as run:
        for _ in run.epoch(range(steps)):
            out.append(float(run.step(prefetching_step).detach()))
        run.evaluate(top1=0.1)
    return out, X


def test_a_step_that_prefetches_into_globals_is_refused_the_detours(tmp_path, capsys):
    plain, plain_next = _losses(tmp_path, tracked=False)
    tracked, tracked_next = _losses(tmp_path, tracked=True)
    assert tracked == plain  # bit for bit
    assert torch.equal(tracked_next, plain_next)  # and no replay after the loop advanced them
    warned = [line for line in capsys.readouterr().err.splitlines() if "perfsuite.track" in line]
    assert len(warned) == 1 and "global `X`, global `Y`" in warned[0]
    assert "pass the batch into run.step" in warned[0] and "detour_safe=False" in warned[0]
    (run_dir,) = tmp_path.iterdir()
    rec = load_record(run_dir)
    assert "work" not in rec and rec.get("timeline") is None
    assert [f for f in rec["flags"] if "global `X`" in f]
    assert not [f for f in rec["flags"] if f.startswith(("no FLOP count", "no profile window"))]


def test_cells_and_iterators_are_found_and_a_clean_step_is_not():
    it = iter(range(3))
    count = 0

    def bumps():
        nonlocal count
        count += 1

    def pulls():
        return next(it)

    def clean(x, y):
        total = 0  # a local, and a cell of its own made anew each call
        return (lambda: total + x)() + y

    class Stepper:
        def __call__(self, x):
            global X
            X = x

    assert outside_writes(bumps) == ["closure cell `count`"]
    assert outside_writes(pulls) == ["iterator `it` (a closure cell)"]
    assert outside_writes(clean) == []
    assert outside_writes(functools.partial(Stepper(), 1)) == ["global `X`"]
    assert outside_writes(len) == []  # a builtin: nothing to read
    # a step re-wrapped on each call is read once: its code is the same object
    assert step_code(functools.partial(clean, 1)) is step_code(clean) is clean.__code__
    assert step_code(Stepper()) is Stepper.__call__.__code__ and step_code(len) is None


def _numbered(tmp_path, where: str) -> list[dict]:
    """4-step epochs of losses 1, 2, 3, 4 (then 5..8), evaluated every 2 steps at `where`."""
    losses = iter(float(v) for v in range(1, 9))
    with perfsuite.track("n", threshold=99.0, out=tmp_path / where, capture=False) as run:
        for _ in range(2):
            for i, _item in enumerate(run.epoch(range(4))):
                if where == "top" and i % 2 == 0:
                    run.evaluate(top1=lambda: 0.1)
                run.step(lambda: next(losses))
                if where == "bottom" and i % 2 == 1:
                    run.evaluate(top1=lambda: 0.1)
    return load_record(run.run_dir)["evaluations"]


def test_an_evaluation_is_numbered_by_the_steps_taken_before_it(tmp_path):
    top, bottom = _numbered(tmp_path, "top"), _numbered(tmp_path, "bottom")
    assert [e["epoch"] for e in top] == [0.0, 0.5, 1.0, 1.5]
    assert [e["epoch"] for e in bottom] == [0.5, 1.0, 1.5, 2.0]
    # train_loss: the steps since the previous evaluation; beside it, the epoch's so far
    assert "train_loss" not in top[0]  # no step yet
    assert [e.get("train_loss") for e in top[1:]] == [1.5, 3.5, 5.5]  # (1+2), (3+4), (5+6)
    assert [e.get("train_loss_epoch") for e in top[1:]] == [1.5, 2.5, 5.5]  # 1.0: epoch 1's
    assert [e["train_loss"] for e in bottom] == [1.5, 3.5, 5.5, 7.5]
    assert [e["train_loss_epoch"] for e in bottom] == [1.5, 2.5, 5.5, 6.5]
