"""`perfsuite history`: the table, the exact --json, `check`'s exit codes and its
regressions-only output, `add` and `note`, and each bad input as one line naming the file or
URL and the field."""

from __future__ import annotations

import json
import sqlite3

import pytest

from perfsuite.__main__ import main
from perfsuite.history_store.store import open_store
from tests.history.records import write_nightly

# 30 nights; time to accuracy steps from ~40 s to ~44 s at night 20
STEP = [40.0 + 0.3 * ((i * 7) % 5 - 2) / 2 + (4.0 if i >= 20 else 0.0) for i in range(30)]
FLAT = [40.0 + 0.3 * ((i * 7) % 5 - 2) / 2 for i in range(30)]


def history(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["history", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def step_db(tmp_path, capsys) -> str:
    runs = write_nightly(tmp_path / "runs", STEP)
    db = str(tmp_path / "h.sqlite")
    code, _, err = history(capsys, "add", *map(str, runs), "--db", db)
    assert code == 0, err
    assert "added 60 of 60 rows" in err
    return db


def test_json_is_exactly_the_documented_shape(step_db, capsys) -> None:
    code, out, _ = history(capsys, "--db", step_db, "--json", "--metric", "time_to_accuracy_s")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["series"]
    (series,) = doc["series"]
    assert list(series) == ["name", "metric", "direction", "points", "change_points"]
    assert series["name"] == "digits:default unknown unknown Test CPU x1 @nightly-box"
    assert (series["metric"], series["direction"], series["points"]) == (
        "time_to_accuracy_s",
        "lower",
        30,
    )
    (change,) = series["change_points"]
    assert list(change) == [
        "index", "time", "attributes", "mean_before", "mean_after", "change_pct", "pvalue", "kind"
    ]  # fmt: skip
    assert change["index"] == 20
    assert change["time"] == "2026-10-01T20:00:00.000000Z"
    assert change["attributes"]["commit"] == f"{20:040x}"
    assert change["mean_before"] == pytest.approx(sum(STEP[:20]) / 20)
    assert change["mean_after"] == pytest.approx(sum(STEP[20:]) / 10)
    assert change["change_pct"] == pytest.approx(
        100 * (change["mean_after"] / change["mean_before"] - 1)
    )
    assert change["pvalue"] < 1e-10
    assert change["kind"] == "regression"


def test_table_names_the_change(step_db, capsys) -> None:
    code, out, _ = history(capsys, "--db", step_db)
    assert code == 0
    (row,) = [line for line in out.splitlines() if "regression" in line and "+10." in line]
    assert f"{20:040x}"[:12] in row
    assert " 20 " in row


def test_adding_again_adds_nothing(step_db, tmp_path, capsys) -> None:
    code, _, err = history(capsys, "add", str(tmp_path / "runs"), "--db", step_db)
    assert code == 0
    assert "added 0 of 60 rows" in err
    with open_store(step_db) as store:
        assert store.count() == 60


def test_check_exit_codes(step_db, tmp_path, capsys) -> None:
    code, out, _ = history(capsys, "check", "--db", step_db)
    assert code == 3
    assert "regression" in out
    code, out, _ = history(capsys, "check", "--db", step_db, "--metric", "step_time_s")
    assert code == 0
    assert "no change point" in out

    flat = write_nightly(tmp_path / "flat", FLAT)
    flat_db = str(tmp_path / "flat.sqlite")
    assert history(capsys, "add", *map(str, flat), "--db", flat_db)[0] == 0
    assert history(capsys, "check", "--db", flat_db)[0] == 0

    few = write_nightly(tmp_path / "few", FLAT[:4])
    few_db = str(tmp_path / "few.sqlite")
    assert history(capsys, "add", *map(str, few), "--db", few_db)[0] == 0
    code, out, _ = history(capsys, "check", "--db", few_db)
    assert code == 4
    assert "insufficient data" in out
    assert history(capsys, "check", "--db", few_db, "--min-points", "4")[0] == 0

    code, _, err = history(capsys, "check", "--db", str(tmp_path / "none.sqlite"))
    assert code == 2
    assert err.startswith(f"perfsuite: error: {tmp_path / 'none.sqlite'}: field db: ")


def test_check_regressions_only(step_db, capsys) -> None:
    code, out, _ = history(capsys, "check", "--db", step_db, "--regressions-only")
    assert code == 3
    assert "step_time_s" not in out
    assert "time_to_accuracy_s" in out
    code, out, _ = history(capsys, "check", "--db", step_db, "--regressions-only", "--json")
    doc = json.loads(out)
    assert doc["exit_code"] == 3
    assert [s["label"] for s in doc["series"]] == ["regression"]
    code, out, _ = history(
        capsys, "check", "--db", step_db, "--regressions-only", "--metric", "step_time_s"
    )
    assert (code, out.strip()) == (0, "no regression")


def test_a_regression_seen_too_soon_is_suspicious(tmp_path, capsys) -> None:
    runs = write_nightly(tmp_path / "runs", [*FLAT[:28], 44.1, 44.3])
    db = str(tmp_path / "h.sqlite")
    assert history(capsys, "add", *map(str, runs), "--db", db)[0] == 0
    code, out, _ = history(capsys, "check", "--db", db, "--metric", "time_to_accuracy_s")
    assert code == 0
    assert "suspicious" in out


def test_note_marks_a_known_change(step_db, capsys) -> None:
    code, out, _ = history(capsys, "--db", step_db, "--json")
    name = json.loads(out)["series"][0]["name"]
    code, _, err = history(
        capsys, "note", name, "2026-10-01T19:30:00Z", "planned: driver 550 -> 560", "--db", step_db
    )
    assert code == 0, err
    code, out, _ = history(capsys, "--db", step_db, "--metric", "time_to_accuracy_s")
    assert "planned: driver 550 -> 560" in out
    code, out, _ = history(capsys, "check", "--db", step_db)
    assert code == 0
    assert "marked" in out
    code, _, err = history(capsys, "note", "no such series", "2026-10-01", "x", "--db", step_db)
    assert code == 2
    assert "field series" in err


def test_add_refuses_a_record_without_the_metric(step_db, tmp_path, capsys) -> None:
    code, _, err = history(
        capsys, "add", str(tmp_path / "runs"), "--db", step_db, "--metric", "mfu"
    )
    assert code == 2
    first = tmp_path / "runs" / "night000" / "run.json"
    assert err.strip() == f"perfsuite: error: {first}: field mfu: the record has no value for it"
    with open_store(step_db) as store:
        assert store.count() == 60


def test_a_bad_record_leaves_the_store_as_it_was(step_db, tmp_path, capsys) -> None:
    more = write_nightly(tmp_path / "more", FLAT[:3])
    bad = more[1] / "run.json"
    bad.write_text(bad.read_text().replace('"schema_version": ', '"schema_version": "x", "_": '))
    code, _, err = history(capsys, "add", *map(str, more), "--db", step_db)
    assert code == 2
    assert str(bad) in err
    assert sqlite3.connect(step_db).execute("SELECT COUNT(*) FROM history_points").fetchone() == (
        60,
    )


def test_a_store_of_a_newer_schema_is_refused(step_db, capsys) -> None:
    con = sqlite3.connect(step_db)
    con.execute("UPDATE perfsuite_history_meta SET value = '9' WHERE key = 'schema_version'")
    con.commit()
    code, _, err = history(capsys, "--db", step_db)
    assert code == 2
    assert err.startswith(f"perfsuite: error: {step_db}: field schema_version: 9 is newer")


def test_a_url_that_does_not_answer(capsys) -> None:
    pytest.importorskip("psycopg")
    code, _, err = history(capsys, "--db", "postgresql://u:pw@127.0.0.1:9/h")
    assert code == 2
    assert err.startswith("perfsuite: error: postgresql://u:***@127.0.0.1:9/h: field db: ")
    assert len(err.strip().splitlines()) == 1


def test_a_metric_no_series_has(step_db, capsys) -> None:
    code, _, err = history(capsys, "--db", step_db, "--metric", "tokens_per_s")
    assert code == 2
    assert err.startswith(f"perfsuite: error: {step_db}: field tokens_per_s: no series has")


def test_add_and_check_on_each_backend(store_url, tmp_path, capsys) -> None:
    runs = write_nightly(tmp_path / "runs", STEP)
    assert history(capsys, "add", *map(str, runs), "--db", store_url)[0] == 0
    assert history(capsys, "add", *map(str, runs), "--db", store_url)[0] == 0
    code, out, _ = history(capsys, "--db", store_url, "--json")
    assert code == 0
    assert [s["points"] for s in json.loads(out)["series"]] == [30, 30]
    assert history(capsys, "check", "--db", store_url)[0] == 3


def test_a_fresh_improvement_does_not_undo_a_confirmed_regression(tmp_path, capsys) -> None:
    """A step up at night 20 stays a regression when the newest point alone falls back: one
    point is no confirmed change (the real digits history of docs/results had this shape)."""
    times = [*STEP[:29], 36.0]
    runs = write_nightly(tmp_path / "runs", times)
    db = str(tmp_path / "h.sqlite")
    assert history(capsys, "add", *map(str, runs), "--db", db)[0] == 0
    code, out, _ = history(capsys, "--db", db, "--json", "--metric", "time_to_accuracy_s")
    kinds = [(c["index"], c["kind"]) for c in json.loads(out)["series"][0]["change_points"]]
    assert kinds == [(20, "regression"), (29, "improvement")]
    code, out, _ = history(capsys, "check", "--db", db, "--metric", "time_to_accuracy_s")
    assert code == 3
    assert "1 newer change(s) too recent to count" in out


def test_add_prices_as_perfsuite_cost_does(tmp_path, capsys, monkeypatch) -> None:
    """The cost to accuracy in the history uses the price table `perfsuite cost` uses: the
    built-in one overlaid by $PERFSUITE_PRICES."""
    from perfsuite.record import load_record, write_record

    (run,) = write_nightly(tmp_path / "runs", [100.0])
    record = load_record(run)
    record["hardware"]["instance_type"] = "test-box-36"
    write_record(run, record)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"instances": {"test-box-36": {"usd_per_hour": 36.0}}}))
    db = str(tmp_path / "h.sqlite")
    code, _, err = history(capsys, "add", str(run), "--db", db, "--metric", "cost_usd")
    assert code == 2 and "field cost_usd: the record has no value for it" in err
    monkeypatch.setenv("PERFSUITE_PRICES", str(prices))
    code, _, err = history(capsys, "add", str(run), "--db", db, "--metric", "cost_usd")
    assert code == 0, err
    with open_store(db) as store:
        (series,) = store.series()
    assert series.metric == "cost_usd" and series.values == [pytest.approx(1.0)]  # 100 s x $36/h
    prices.write_text("{")
    code, _, err = history(capsys, "add", str(run), "--db", db)
    assert code == 2 and "prices.json" in err
