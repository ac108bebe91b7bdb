"""`perfsuite compare` and the multi-run report on hand-built records: FLOP agreement, exit
codes, --json, the overlaid curve chart, and agreement with `perfsuite.compare`."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

from perfsuite.__main__ import main
from perfsuite.analyzers.results.record_view import framework
from perfsuite.analyzers.runs.compare import compare, items_from_records
from perfsuite.analyzers.runs.compare_work import flop_check
from perfsuite.record import quantity, write_record
from perfsuite.record.migrate import migrate
from perfsuite.record.tta import crossing_dict, first_crossing
from tests.helpers import build_record


def _run(make_record, run_id, tta, group=None, index=0, size=1, reach=True, flops=2e9):
    """A record that reaches 0.9 at `tta` s in epoch 3 (or never, with reach=False)."""
    rec = build_record(make_record)
    rec["run_id"] = run_id
    last = 0.95 if reach else 0.85
    curve = [(1, tta / 3, 0.5), (2, 2 * tta / 3, 0.8), (3, tta, last)]
    rec["evaluations"] = [
        {"epoch": e, "train_time_s": t, "metrics": {"top1": m}} for e, t, m in curve
    ]
    rec["time_to_accuracy"] = crossing_dict(first_crossing(rec["evaluations"], "top1", 0.9))
    rec["status"] = "reached" if reach else "not_reached"
    rec["task"]["workload"] = "toy"
    rec["throughput"]["epoch_times_s"] = [tta / 3] * 3
    rec["work"]["flops_per_step"] = quantity(flops, "FLOP", "counted")
    if group:
        rec["group"] = {"id": group, "index": index, "size": size}
    return rec


def _group(tmp_path, make_record, name, times, reach=True):
    folder = tmp_path / name
    for i, t in enumerate(times):
        write_record(
            folder / f"{name}-{i}",
            _run(make_record, f"{name}-{i}", t, name, i, len(times), reach=reach),
        )
    return folder


def _times(mean, seed, n=6):
    return list(mean * (1 + 0.01 * np.random.default_rng(seed).standard_normal(n)))


def test_flop_disagreement_is_flagged_with_its_size_and_the_ops(make_record):
    a = _run(make_record, "torch", 10.0)
    b = copy.deepcopy(a)
    b["run_id"] = "tf"
    b["framework"] = "tensorflow 2.21.0"
    b["work"]["flops_per_step"] = quantity(2.2e9, "FLOP", "counted")
    b["work"]["per_op"][3]["flops"] = 6e8  # aten::foo, forward: 4e8 -> 6e8
    check = flop_check("torch", a, "tf", b, framework(a), framework(b))
    assert check.same_network and check.agree is False
    assert check.difference == pytest.approx(2e8) and check.relative == pytest.approx(0.1)
    assert check.frameworks[1] == "tensorflow 2.21.0"
    assert [d.name for d in check.by_op] == ["forward/aten::foo"]
    assert check.by_op[0].difference == pytest.approx(2e8)
    fam = {d.name: d.difference for d in check.by_family}
    assert fam == {f"forward/{a['work']['per_op'][3].get('family', '?')}": pytest.approx(2e8)}
    same = flop_check("torch", a, "again", copy.deepcopy(a), "x", "x")
    assert same.agree is True and same.difference == 0 and same.by_op == []


def test_different_batch_is_not_the_same_network(make_record):
    a = _run(make_record, "a", 10.0)
    b = _run(make_record, "b", 10.0, flops=4e9)
    b["work"]["batch_size"] = 64
    check = flop_check("a", a, "b", b, "x", "x")
    assert not check.same_network and check.agree is None and check.by_family == []
    (note,) = check.notes
    assert note.endswith("batch 32 vs 64")


def test_framework_is_the_records_and_older_records_get_it_at_load():
    assert framework({"framework": "pytorch 2.13.0+cpu"}) == "pytorch 2.13.0+cpu"
    assert framework({"framework": None}) == framework({}) == "unknown"

    def older(**fields):  # a version-2 record, as the loader migrates it
        return migrate({"schema_version": 2, **fields})

    env = {"framework": "tensorflow 2.21.0"}  # preferred to the record's own, as readers did
    assert framework(older(environment=env, framework="x")) == "tensorflow 2.21.0"
    assert framework(older(framework="pytorch 2.13.0+cpu")) == "pytorch 2.13.0+cpu"
    env = {"frameworks": {"torch": "2.13.0"}}
    assert framework(older(environment=env)) == "pytorch 2.13.0"
    env = {"frameworks": {"torch": "2.13.0", "tensorflow": "2.21.0"}}
    assert framework(older(environment=env)) == "unknown"


def test_items_split_by_group_id_and_runs_stay_single(make_record):
    recs = [_run(make_record, f"a{i}", 10.0, "gA") for i in range(2)]
    recs += [_run(make_record, "solo", 10.0)]
    items = items_from_records(recs)
    assert [(label, len(r)) for label, r in items] == [("gA", 2), ("solo", 1)]
    assert [len(r) for _, r in items_from_records(recs, "folder")] == [2, 1]


def test_comparison_values_and_ratios(make_record):
    a = [_run(make_record, f"a{i}", t, "A") for i, t in enumerate([10.0, 12.0])]
    b = [_run(make_record, f"b{i}", t, "B") for i, t in enumerate([15.0, 18.0])]
    c = compare([("A", a), ("B", b)])
    base, cand = c.items
    assert base.time_to_accuracy_s == pytest.approx(11.0)
    assert cand.time_to_accuracy_ratio == pytest.approx(16.5 / 11.0)
    assert cand.time_per_epoch_ratio == pytest.approx(16.5 / 11.0)
    assert cand.flops_ratio == 1.0 and c.flops[0].agree is True
    assert [v.quantity for v in c.verdicts] == ["time_to_accuracy", "time_per_epoch"]
    assert c.runs[0].achieved_flop_per_s == pytest.approx(2e9 / 0.1)


def test_page_faults_per_step_come_from_the_steady_epochs(tmp_path, make_record, capsys):
    """Faults per step = median of epochs 2.. / steps per epoch; a run whose allocator hands
    pages back every step shows a higher rate beside the same model's other run."""
    from perfsuite.analyzers.results.record_view import faults_per_step

    a, b = _run(make_record, "a", 10.0), _run(make_record, "b", 12.0)
    a["extra"] = {"steps_per_epoch": 20}
    b["extra"] = {"steps_per_epoch": 20}
    a["throughput"]["epoch_minor_faults"] = [900_000, 40_000, 60_000]  # epoch 1 left out
    b["throughput"]["epoch_minor_faults"] = [900_000, 120_000, 100_000]
    assert faults_per_step(a) == 2_500.0 and faults_per_step(b) == 5_500.0
    c = compare([("a", [a]), ("b", [b])])
    assert c.items[1].faults_per_step == 5_500.0 and c.items[1].faults_ratio == 2.2
    one = copy.deepcopy(a)
    one["throughput"]["epoch_minor_faults"] = [1_000]
    assert faults_per_step(one) == 50.0  # one epoch: it is all there is
    del one["throughput"]["epoch_minor_faults"]
    assert faults_per_step(one) is None  # a record without epoch_minor_faults
    for rec, name in ((a, "a"), (b, "b")):
        write_record(tmp_path / name, rec)
    main(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    line = next(x for x in capsys.readouterr().out.splitlines() if "page faults" in x)
    assert "2,500" in line and "5,500 (x2.200)" in line


def test_cli_exit_code_slower_and_json(tmp_path, make_record, capsys):
    base = _group(tmp_path, make_record, "base", _times(100, 1))
    slow = _group(tmp_path, make_record, "slow", _times(105, 2))
    code = main(["compare", str(base), str(slow), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["exit_code"] == 3
    v = out["comparison"]["verdicts"][0]
    assert v["quantity"] == "time_to_accuracy" and v["verdict"] == "slower"
    assert v["ratio"] == pytest.approx(v["mean_candidate"] / v["mean_baseline"])
    assert v["test"]["method"] == "exact" and v["test"]["p_value"] < 0.05
    assert v["resamples"] == 10_000 and v["seed"] == 0
    assert [i["label"] for i in out["comparison"]["items"]] == ["base", "slow"]
    assert len(out["comparison"]["runs"]) == 12
    assert out["comparison"]["runs"][0]["framework"]
    assert out["comparison"]["flops"][0]["agree"] is True
    # the same groups the other way round: faster, exit 0; with a large min effect: 0 too
    assert main(["compare", str(slow), str(base)]) == 0
    assert "FASTER" in capsys.readouterr().out
    assert (
        main(["compare", "--group-a", str(base), "--group-b", str(slow), "--min-effect", "0.1"])
        == 0
    )
    assert "minimum effect" in capsys.readouterr().out


def test_cli_exit_codes_no_difference_no_verdict_and_bad_input(tmp_path, make_record, capsys):
    a = _group(tmp_path, make_record, "a", _times(100, 1))
    b = _group(tmp_path, make_record, "b", _times(100, 2))
    assert main(["compare", str(a), str(b)]) == 0
    assert "no significant difference" in capsys.readouterr().out
    dnc1 = _group(tmp_path, make_record, "dnc1", [10.0, 11.0, 12.0, 13.0], reach=False)
    dnc2 = _group(tmp_path, make_record, "dnc2", [10.0, 11.0], reach=False)
    assert main(["compare", str(dnc1), str(dnc2)]) == 4
    assert main(["compare", str(a), str(dnc1)]) == 3  # never reaching is slower (p = 2/210)
    capsys.readouterr()
    assert main(["compare", str(a)]) == 2
    assert main(["compare", str(tmp_path / "missing"), str(a)]) == 2
    assert main(["compare", "--group-a", str(a)]) == 2
    assert main(["compare", str(a), str(b), "--alpha", "2"]) == 2
    err = capsys.readouterr().err
    assert "at least two" in err and "missing" in err and "--group-b" in err


def test_two_single_runs_have_no_verdict_and_exit_0(tmp_path, make_record, capsys):
    write_record(tmp_path / "r1", _run(make_record, "r1", 10.0))
    write_record(tmp_path / "r2", _run(make_record, "r2", 30.0))
    assert main(["compare", str(tmp_path / "r1"), str(tmp_path / "r2")]) == 0
    out = capsys.readouterr().out
    assert "no statistical verdict" in out and "x3.000" in out


def test_api_compare_table_agrees_with_the_analyzer(tmp_path, make_record):
    import perfsuite

    write_record(tmp_path / "r1", _run(make_record, "r1", 10.0))
    write_record(tmp_path / "r2", _run(make_record, "r2", 30.0))
    table = perfsuite.compare(tmp_path / "r1", tmp_path / "r2")
    c = compare(
        [
            ("r1", [perfsuite.open(tmp_path / "r1").record]),
            ("r2", [perfsuite.open(tmp_path / "r2").record]),
        ]
    )
    for run in c.runs:
        col = table[run.run_id]
        assert col["time_to_accuracy_s"] == run.time_to_accuracy_s
        assert col["flops_per_step"] == run.flops_per_step
        assert col["achieved_flop_per_s"] == run.achieved_flop_per_s
        assert col["framework"] == run.framework
        assert col["frac_of_roof"] == run.frac_of_roof


def test_multi_run_report_shows_one_overlaid_curve_chart(tmp_path, make_record):
    a = _group(tmp_path, make_record, "ga", _times(100, 1, 3))
    b = _group(tmp_path, make_record, "gb", _times(105, 2, 3))
    out = tmp_path / "multi.html"
    assert main(["report", str(a), str(b), "-o", str(out)]) == 0
    text = out.read_text()
    assert text.count('id="fig-compare-curves"') == 1
    assert 'id="fig-curves"' not in text  # the old per-page curve chart is replaced
    payload = re.search(r'psDraw\("fig-compare-curves",(\{.*?\})\);</script>', text, re.S)
    fig = json.loads(payload.group(1))
    names = {t.get("legendgroup") for t in fig["data"]}
    assert names == {"ga", "gb"}
    assert sum(1 for t in fig["data"] if t.get("mode") == "lines+markers") == 6
    assert '<section id="compare">' in text and "Verdict" in text
    assert "smallest possible p = 0.1" in text  # 3 vs 3 runs: says to add repeats
    for sid, title in (("roofline", "Roofline"), ("ops", "Per-op breakdown"),
                       ("environment", "Environment and config")):  # fmt: skip
        assert f'<section id="{sid}"><h2>{title}</h2><details class="fold">' in text
    single = tmp_path / "single.html"
    assert main(["report", str(a / "ga-0"), "-o", str(single)]) == 0
    one = single.read_text()
    assert 'id="fig-curves"' in one and "fig-compare" not in one and "<details" not in one


def test_api_verdict_is_the_command(tmp_path, make_record, capsys):
    import perfsuite

    base = _group(tmp_path, make_record, "base", _times(100, 1))
    slow = _group(tmp_path, make_record, "slow", _times(105, 2))
    c = perfsuite.verdict(base, perfsuite.open(slow), min_effect=0.01)
    assert main(["compare", str(base), str(slow), "--min-effect", "0.01", "--json"]) == 3
    cli = json.loads(capsys.readouterr().out)["comparison"]
    assert [i.label for i in c.items] == ["base", "slow"]
    assert c.verdicts[0].verdict == "slower"
    for mine, theirs in zip(c.verdicts, cli["verdicts"], strict=True):
        assert (mine.ratio, mine.ci_low, mine.test.p_value) == (
            theirs["ratio"],
            theirs["ci_low"],
            theirs["test"]["p_value"],
        )


def test_crashed_runs_are_left_out_of_the_verdict_not_counted_as_dnc(make_record):
    a = [_run(make_record, f"a{i}", 10.0 + i, "A") for i in range(4)]
    b = [_run(make_record, f"b{i}", 10.0 + i, "B", reach=False) for i in range(4)]
    for r in b[1:]:
        r["status"] = "crashed"
    c = compare([("A", a), ("B", b)])
    tta = c.verdicts[0]
    assert (tta.n_candidate, tta.dnc_candidate) == (1, 1)  # only the finished run counts
    # "runs reached" counts the same runs as the verdict: 0/1, not 0/4
    assert (c.items[1].n_reached, c.items[1].n_runs, c.items[1].n_unfinished) == (0, 1, 3)
    assert c.items[1].kind == "group"
    assert [n for n in c.notes if n.endswith(": b1, b2, b3") and "verdict" in n]
    single = compare([("a0", a[:1]), ("b1", b[1:2])])  # no verdict: the note still says it
    assert single.items[1].n_runs == 0
    assert [n for n in single.notes if n.startswith("1 run(s) crashed") and n.endswith(": b1")]
    b[1]["status"] = "not_reached"
    assert compare([("A", a), ("B", b)]).verdicts[0].dnc_candidate == 2


def test_small_flop_difference_agrees_and_is_still_explained(make_record):
    a = _run(make_record, "torch", 10.0)
    b = copy.deepcopy(a)
    b["work"]["flops_per_step"] = quantity(2e9 - 455, "FLOP", "counted")
    b["work"]["per_op"][2]["flops"] -= 455  # aten::add_, optimizer
    check = flop_check("torch", a, "tf", b, "pytorch", "tensorflow")
    assert check.agree is True and check.difference == -455
    fam = a["work"]["per_op"][2].get("family", "?")
    assert [(d.name, d.difference) for d in check.by_family] == [(f"optimizer/{fam}", -455)]
    assert check.by_op == []


def test_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = capsys.readouterr().out
    expected = [
        "0  no candidate is significantly slower",
        "2  usage error or bad input",
        "3  a candidate group is significantly slower",
        "4  groups were given",
    ]
    assert all(line in text for line in expected)


def test_gate_picks_the_verdicts_that_set_the_exit_code():
    from types import SimpleNamespace as V

    from perfsuite.cli.compare_cmd import exit_code

    tta_same = V(quantity="time_to_accuracy", verdict="no significant difference")
    epoch_slow = V(quantity="time_per_epoch", verdict="slower")
    assert exit_code([tta_same, epoch_slow], "time_to_accuracy") == 0
    assert exit_code([tta_same, epoch_slow], "time_per_epoch") == 3
    assert exit_code([tta_same, epoch_slow], "both") == 3
    assert exit_code([V(quantity="time_to_accuracy", verdict="no verdict")], "both") == 4
    assert exit_code([], "time_to_accuracy") == 0


def test_runs_on_other_hardware_are_drawn_under_their_own_roofs(make_record):
    """A CPU run and an H100-class run in one report: each hardware gets its roof; before,
    only the baseline's was drawn and the GPU point sat 600x above it."""
    from perfsuite.analyzers.runs.compare import run_values
    from perfsuite.figures.compare import positions_figure

    cpu = _run(make_record, "cpu-run", 10.0)
    gpu = _run(make_record, "gpu-run", 1.0)
    gpu["hardware"] = {"name": "NVIDIA H100 80GB HBM3"}
    gpu["ceilings"] = copy.deepcopy(gpu["ceilings"])
    gpu["ceilings"]["peak_flops"]["value"] = 5e13
    cpu["hardware"] = {"name": "AMD EPYC"}
    runs = [run_values("a", cpu), run_values("b", gpu)]
    assert runs[1].peak_flops == 5e13 and runs[0].peak_flops != 5e13
    fig = positions_figure(runs)
    roofs = [t.name for t in fig.data if t.mode == "lines"]
    assert roofs == [
        f"roof of AMD EPYC: {_si(runs[0].peak_flops)}, {_si(runs[0].memory_bandwidth, 'byte/s')}",
        f"roof of NVIDIA H100 80GB HBM3: 50 TFLOP/s, {_si(runs[1].memory_bandwidth, 'byte/s')}",
    ]


def _si(v, unit="FLOP/s"):
    from perfsuite import fmt

    return fmt.si(v, unit)


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.44, "x1.440"), (18141.007, "x18,141"), (0.00074167, "x0.00074"), (0.0123, "x0.012"),
     (0.0, "x0.000"), (None, "n/a")],
)  # fmt: skip
def test_ratios_read_at_any_size(value, text):
    """The user trial saw x18141.007, x0.001 for 0.00074 and +1.26e+05%."""
    from perfsuite import fmt

    assert fmt.ratio(value) == text


def test_relative_differences_read_at_any_size():
    from perfsuite import fmt

    assert fmt.rel(1260.0) == "+126,000%"
    assert fmt.rel(9.996) == "+1,000%" and fmt.ratio(99.9996) == "x100"
    assert fmt.rel(-4.93e-7) == "-4.93e-05%"
    assert fmt.rel(0.0512) == "+5.12%"


def test_epochs_of_other_sizes_and_other_workloads_are_said(make_record):
    """An H100 epoch of 98 steps against a 2-step CPU epoch read as x1.440 without a word."""
    a, b = _run(make_record, "a", 10.0), _run(make_record, "b", 20.0)
    a["extra"] = {**a.get("extra", {}), "steps_per_epoch": 98}
    b["extra"] = {**b.get("extra", {}), "steps_per_epoch": 2}
    notes = compare([("a", [a]), ("b", [b])]).notes
    assert "(2 vs 98 steps)" in next(n for n in notes if "epochs of different sizes" in n)
    b["extra"]["steps_per_epoch"] = 98
    b["task"] = {**b["task"], "workload": "other"}
    notes = compare([("a", [a]), ("b", [b])]).notes
    assert not any("epochs of different sizes" in n for n in notes)
    assert "(other, toy)" in next(n for n in notes if n.startswith("runs of different workloads"))


def _retarget(rec, threshold):
    """The same curve held to another threshold (task and time to accuracy agree)."""
    rec["task"] = {**rec["task"], "threshold": threshold}
    rec["time_to_accuracy"] = crossing_dict(first_crossing(rec["evaluations"], "top1", threshold))
    return rec


def test_different_targets_give_no_verdict_on_time_to_accuracy_and_exit_4(
    tmp_path, make_record, capsys
):
    """Times to 0.9 against times to 0.95 were SLOWER with exit 3 beside a "not comparable"
    note; now no verdict (exit 4), and time per epoch, the same work, keeps its verdict."""
    base = _group(tmp_path, make_record, "base", _times(100, 1))
    slow = _group(tmp_path, make_record, "slow", _times(105, 2))
    for f in slow.rglob("run.json"):
        rec = json.loads(f.read_text())
        write_record(f.parent, _retarget(rec, 0.95))
    assert main(["compare", str(base), str(slow), "--json"]) == 4
    out = json.loads(capsys.readouterr().out)["comparison"]
    tta, tpe = out["verdicts"]
    assert tta["verdict"] == "no verdict"
    assert tta["reason"].startswith("not comparable: ")
    assert "threshold 0.9 vs top1 threshold 0.95" in tta["reason"]
    assert tta["ratio"] is None and tta["test"] is None and tta["ci_low"] is None
    assert tta["mean_candidate"] > tta["mean_baseline"]  # the numbers stay
    assert tpe["verdict"] == "slower"
    assert out["items"][1]["time_to_accuracy_ratio"] > 1  # side by side, as before
    assert main(["compare", str(base), str(slow), "--gate", "time_per_epoch"]) == 3


def test_different_workloads_or_epoch_sizes_give_no_verdict(make_record):
    base = [_run(make_record, f"a{i}", t, "A") for i, t in enumerate(_times(100, 1))]
    other = [_run(make_record, f"b{i}", t, "B") for i, t in enumerate(_times(150, 2))]
    for r in other:
        r["task"]["workload"] = "cifar10"
    verdicts = compare([("A", base), ("B", other)]).verdicts
    assert [v.verdict for v in verdicts] == ["no verdict", "no verdict"]
    assert all(v.reason.endswith("(cifar10 vs toy)") for v in verdicts)
    for r in other:
        r["task"]["workload"] = "toy"
        r["extra"] = {"steps_per_epoch": 98}
    for r in base:
        r["extra"] = {"steps_per_epoch": 2}
    tta, tpe = compare([("A", base), ("B", other)]).verdicts
    assert tta.verdict == "slower"  # the same target of the same workload: comparable
    assert tpe.verdict == "no verdict" and tpe.reason.endswith("(2 steps vs 98 steps)")


def test_a_candidate_that_reaches_less_often_is_warned_about(tmp_path, make_record, capsys):
    """1 of 5 candidate runs reached (the fastest of all), 5 of 5 baseline runs: the rank test
    gives p = 0.11, no significant difference and exit 0, which said nothing of it before."""
    base = _group(tmp_path, make_record, "base", _times(100, 1, 5))
    cand = tmp_path / "cand"
    for i in range(5):
        rec = _run(make_record, f"c{i}", 50.0, "cand", i, 5, reach=i == 0)
        write_record(cand / f"c{i}", rec)
    assert main(["compare", str(base), str(cand)]) == 0
    captured = capsys.readouterr()
    line = (
        "cand reached the target in 1/5 runs, baseline base in 5/5 (no significant difference: "
        "the rank test cannot tell this from chance with these repeats: add repeats)"
    )
    assert f"note: {line}" in captured.out and f"warning: {line}" in captured.err
    assert main(["compare", str(cand), str(base)]) == 0  # the other way round: nothing to say
    assert "reached the target in" not in capsys.readouterr().err


def _op_table(text: str) -> list[str]:
    """The op names of the first "ops with the largest time change" table."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("ops with the largest")) + 3
    rows = []
    for line in lines[start:]:
        if not line.strip() or line.startswith(("note", "  note")):
            break
        rows.append(line.split()[0])
    return rows


def test_compare_top_follows_the_cli_rules(tmp_path, make_record, capsys):
    a, b = _run(make_record, "a", 10.0), _run(make_record, "b", 10.0)
    for rec in (a, b):  # three ops with device time
        for op in rec["timeline"]["ops"]:
            op["device_time_s"] = 0.01
    b["timeline"]["ops"][0]["device_time_s"] = 0.02  # one op time differs
    for rec, name in ((a, "a"), (b, "b")):
        write_record(tmp_path / name, rec)
    args = ["compare", str(tmp_path / "a"), str(tmp_path / "b")]
    assert main([*args, "--top", "0"]) == 0
    every = _op_table(capsys.readouterr().out)
    assert len(every) >= 3
    assert main([*args, "--top", "1"]) == 0
    assert len(_op_table(capsys.readouterr().out)) == 2  # one op and "other"
    assert main([*args, "--top", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["comparison"]["ops"][0]["rows"]
    assert len(rows) == len(every)  # --json is never cut by --top
    assert main([*args, "--top", "-1"]) == 2


def test_different_models_are_different_networks_in_one_line(tmp_path, make_record, capsys):
    a = _run(make_record, "a", 10.0)
    b = _run(make_record, "b", 10.0, flops=3e9)
    a["model"] = "airbench-style fast net, widths 64,256,256"
    b["model"] = "ResNet-9 style, width x1.0"
    check = flop_check("a", a, "b", b, "x", "x")
    assert not check.same_network and check.agree is None
    assert check.by_family == [] and check.by_op == []
    tf = copy.deepcopy(b)
    tf["model"] = "ResNet-9 style, width x1.0 (TensorFlow)"
    assert flop_check("b", b, "tf", tf, "x", "y").same_network  # one network, two frameworks
    other = copy.deepcopy(b)
    other["config"] = {"recipe": "dawnbench"}
    b["config"] = {"recipe": "fast"}
    assert not flop_check("b", b, "o", other, "x", "x").same_network
    for rec, name in ((a, "a"), (b, "b")):
        write_record(tmp_path / name, rec)
    main(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    flops = out[out.index("FLOPs per step:") :].split("\n\n")[0].splitlines()
    (line,) = flops[1:]  # the two models, by the names their records give
    assert line.startswith("  b vs a") and line.endswith(
        "'airbench-style fast net, widths 64,256,256' vs 'ResNet-9 style, width x1.0'"
    )
    assert "DISAGREE" not in out


def test_run_table_says_dnc_for_runs_that_did_not_reach(make_record):
    """compare's run table uses the leaderboard's word: DNC (did not converge), diverged runs
    named so, and a crashed run is left out, not a DNC (as in the verdict)."""
    from perfsuite.views.compare_rows import run_rows

    runs = [_run(make_record, "ok", 10.0), _run(make_record, "dnc", 10.0, reach=False)]
    runs += [_run(make_record, "nan", 10.0, reach=False), _run(make_record, "x", 10.0, reach=False)]
    runs[2]["status"] = "diverged"
    runs[3]["status"] = "crashed"
    c = compare([(r["run_id"], [r]) for r in runs])
    cells = [row[4] for row in run_rows(c)]
    assert cells[1:] == ["DNC", "DNC (diverged)", "left out"]
    assert "DNR" not in cells
