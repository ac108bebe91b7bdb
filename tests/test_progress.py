"""Run progress: named setup phases, a step-level bar with samples/s, and
nothing at all with progress off."""

from __future__ import annotations

from perfsuite.runner.engine.progress import RunProgress


def test_quiet_progress_prints_nothing(capsys):
    p = RunProgress(False, "run-1")
    p.phase("loading data")
    p.start_training(3, 10)
    p.epoch_done(1, 123.0, "top1=0.5")
    p.close()
    assert p.bar is None
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_phases_are_named_with_the_previous_phase_time(capsys):
    p = RunProgress(True, "run-1")
    p.phase("loading data")
    p.phase("building the model")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[perfsuite] run-1: loading data"
    assert err[1].startswith("[perfsuite] run-1: building the model")
    assert "[loading data: " in err[1]


def test_step_bar_counts_steps_over_all_epochs_and_shows_samples_per_s(capsys):
    p = RunProgress(True, "run-\x1b[2J")  # a hostile name is escaped
    p.start_training(3, 10)
    assert p.bar.total == 30
    for _ in range(10):
        p.step()
    p.evaluating(1)  # the bar stands still while the held-out set is evaluated: said
    assert p.bar.postfix == "epoch 1/3: evaluating"
    p.epoch_done(1, 2500.0, "top1=0.9000")
    assert p.bar.n == 10
    # named by its own epoch: a run that stops at this evaluation does not end on "epoch 2"
    assert p.bar.postfix == "epoch 1/3 done, 2.5 ksample/s, top1=0.9000"
    p.close()
    err = capsys.readouterr().err
    assert "\x1b[2J" not in err and "up to 3 epochs x 10 steps" in err


def test_a_phase_inside_training_does_not_take_over_its_time(capsys):
    p = RunProgress(True, "run-1")
    p.start_training(2, 5)
    p.phase("profile window: 3 steps, off the clock")
    p.close()
    p.phase("inference latency")
    err = capsys.readouterr().err
    assert "profile window: 3 steps, off the clock" in err
    assert "inference latency  [" in err
    assert "up to 2 epochs x 5 steps" in err
    assert "[profile window" not in err
