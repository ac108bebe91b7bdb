"""The DAWNBench time-to-accuracy rule: first evaluation with metric >= threshold."""

from analyzers.tta import crossing_dict, first_crossing


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
    from analyzers.tta import record_crossing

    evals = _evals([(1, 5.0, 0.30), (2, 9.0, 0.058), (3, 14.0, 0.05)])
    c = first_crossing(evals, "top1", 0.058, direction="lower")
    assert (c.reached, c.time_s) == (True, 9.0)
    rec = make_record([(1, 5.0, 0.30), (2, 9.0, 0.07), (3, 14.0, 0.05)], threshold=0.058)
    rec["task"]["direction"] = "lower"
    assert record_crossing(rec).time_s == 14.0
    assert record_crossing(rec, threshold=0.1).time_s == 9.0
