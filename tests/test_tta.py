"""The DAWNBench time-to-accuracy rule: first evaluation with metric >= threshold."""

from perfsuite.record.tta import crossing_dict, first_crossing


def _evals(points):
    return [{"epoch": e, "train_time_s": t, "metrics": {"top1": m}} for e, t, m in points]


def test_equal_to_threshold_counts():
    c = first_crossing(_evals([(1, 10.0, 0.93), (2, 20.0, 0.94)]), "top1", 0.94)
    assert (c.reached, c.time_s, c.epoch, c.evaluation_index) == (True, 20.0, 2, 1)


def test_first_crossing_wins_even_if_accuracy_falls_back():
    evals = _evals([(1, 5.0, 0.95), (2, 9.0, 0.90), (3, 14.0, 0.96)])
    c = first_crossing(evals, "top1", 0.94)
    assert (c.time_s, c.epoch) == (5.0, 1)


def test_never_reached():
    c = first_crossing(_evals([(1, 5.0, 0.5), (2, 9.0, 0.9399999)]), "top1", 0.94)
    assert not c.reached and c.time_s is None
    d = crossing_dict(c)
    assert d == {
        "metric": "top1",
        "threshold": 0.94,
        "reached": False,
        "time_s": None,
        "epoch": None,
        "evaluation_index": None,
        "provenance": "measured",
    }


def test_missing_or_null_metric_is_not_reached():
    evals = [
        {"epoch": 1, "train_time_s": 1.0, "metrics": {"top1": None}},
        {"epoch": 2, "train_time_s": 2.0, "metrics": {"top5": 0.99}},
    ]
    assert not first_crossing(evals, "top1", 0.5).reached


def test_lower_is_better_direction_and_record_helper(make_record):
    from perfsuite.record.tta import record_crossing

    evals = _evals([(1, 5.0, 0.30), (2, 9.0, 0.058), (3, 14.0, 0.05)])
    c = first_crossing(evals, "top1", 0.058, direction="lower")
    assert (c.reached, c.time_s) == (True, 9.0)
    rec = make_record([(1, 5.0, 0.30), (2, 9.0, 0.07), (3, 14.0, 0.05)], threshold=0.058)
    rec["task"]["direction"] = "lower"
    assert record_crossing(rec).time_s == 14.0
    assert record_crossing(rec, threshold=0.1).time_s == 9.0


def _stopped(make_record, curve, **config):
    """A run with target top1 >= 0.9 and 5 planned epochs, `config` as in run.json."""
    rec = make_record(curve, threshold=0.9)
    rec["config"] = {"epochs": 5, "all_epochs": False, **config}
    return rec


def test_a_run_that_stopped_at_its_target_is_not_measured_beyond_it(make_record):
    from perfsuite.record.tta import record_crossing, stopped_at_target

    rec = _stopped(make_record, [(1, 5.0, 0.5), (2, 9.0, 0.92)])  # epoch 2 of 5: stopped
    assert stopped_at_target(rec) == 0.9
    c = record_crossing(rec, threshold=0.95)
    assert (c.reached, c.stopped_at, c.measured) == (False, 0.9, False)
    # at or below its own target the curve is complete: measured as usual
    assert record_crossing(rec, threshold=0.92).time_s == 9.0
    assert record_crossing(rec, threshold=0.9).stopped_at is None
    # another metric is cut at the same point: a value it never showed is not measured
    rec["evaluations"][-1]["metrics"]["top5"] = 0.97
    assert record_crossing(rec, threshold=0.99, metric="top5").stopped_at == 0.9
    assert record_crossing(rec, threshold=0.99, metric="f1").stopped_at is None  # absent


def test_a_run_that_trained_every_epoch_really_did_not_reach(make_record):
    from perfsuite.record.tta import record_crossing, stopped_at_target

    curve = [(e, 5.0 * e, 0.85 + 0.01 * e) for e in range(1, 6)]  # 0.9 first at epoch 5 of 5
    ran_out = _stopped(make_record, curve)
    assert stopped_at_target(ran_out) is None
    c = record_crossing(ran_out, threshold=0.95)
    assert (c.reached, c.stopped_at, c.measured) == (False, None, True)
    planned = _stopped(make_record, [*curve[:4], (5, 25.0, 0.95)], epochs=None)
    planned["config"]["recipe_values"] = {"epochs": 5}  # the recipe's default, in force
    assert stopped_at_target(planned) is None
    all_epochs_run = _stopped(make_record, [(1, 5.0, 0.91)], all_epochs=True)  # then crashed
    assert stopped_at_target(all_epochs_run) is None
    unknown = make_record([(1, 5.0, 0.91)])  # no planned epochs (an import): it stopped there
    assert stopped_at_target(unknown) == 0.9
    never = _stopped(make_record, [(1, 5.0, 0.5), (2, 9.0, 0.6)])  # never reached its own
    assert stopped_at_target(never) is None


def test_stopped_at_target_in_the_lower_direction(make_record):
    from perfsuite.record.tta import record_crossing

    rec = _stopped(make_record, [(1, 5.0, 0.3), (2, 9.0, 0.08)])
    rec["task"].update(metric="top1", threshold=0.1, direction="lower")
    assert record_crossing(rec, threshold=0.05).stopped_at == 0.1  # stricter is lower
    assert record_crossing(rec, threshold=0.2).time_s == 9.0
