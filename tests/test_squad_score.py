"""The SQuAD v1.1 scorer against hand-worked cases and the real dev file, and its CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.workloads.squad.data import SquadFileError, load_predictions, load_squad
from perfsuite.workloads.squad.score import (
    best_over_golds,
    exact_match,
    normalize_answer,
    score,
    token_f1,
)
from tests.conftest import shared_path

# -- normalisation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("The Denver Broncos", "denver broncos"),
        ("  Denver\tBroncos\n", "denver broncos"),
        ("Levi's Stadium.", "levis stadium"),  # apostrophe removed, not split
        ("gold-themed", "goldthemed"),  # hyphen removed, words joined
        ("a, an, the", ""),  # only articles and punctuation
        ("theatre anthem", "theatre anthem"),  # articles only as whole words
        ("A.N.", ""),  # punctuation goes first: "an" is then a whole-word article
        ("Über «quoted»", "über «quoted»"),  # non-ASCII punctuation is not removed
        ("an apple the", "apple"),
    ],
)
def test_normalize_answer(raw: str, normalised: str) -> None:
    assert normalize_answer(raw) == normalised


def test_exact_match_after_normalisation() -> None:
    assert exact_match("the  Broncos!", "Broncos") == 1.0
    assert exact_match("Broncos", "Denver Broncos") == 0.0
    assert exact_match("", "the") == 1.0  # both normalise to "", as in the official script


# -- token F1 -----------------------------------------------------------------------------


def test_f1_partial_overlap() -> None:
    # pred {broncos}, gold {denver, broncos}: P = 1, R = 1/2, F1 = 2/3
    assert token_f1("Broncos", "Denver Broncos") == pytest.approx(2 / 3)


def test_f1_counts_tokens_with_multiplicity() -> None:
    # pred: new new york (3); gold: new york (2). common = min(2,1)[new] + 1[york] = 2
    # P = 2/3, R = 1, F1 = 2 * (2/3) / (5/3) = 0.8
    assert token_f1("new new york", "New York") == pytest.approx(0.8)
    # pred: new (1); gold: new new (2): common 1, P 1, R 1/2 -> 2/3 (not 1: multiset, not set)
    assert token_f1("new", "new new") == pytest.approx(2 / 3)


def test_f1_zero_when_nothing_common_and_for_empty() -> None:
    assert token_f1("Carolina", "Denver Broncos") == 0.0
    assert token_f1("", "Denver Broncos") == 0.0
    assert token_f1("the", "the") == 0.0  # both empty after normalisation: no common token


def test_max_over_golds() -> None:
    golds = ["Santa Clara, California", "Levi's Stadium", "Levi's Stadium in the San Francisco"]
    em, f1 = best_over_golds("Levi's stadium", golds)
    assert em == 1.0 and f1 == 1.0
    # "clara california" vs gold 1: common 2, P 1, R 2/3 -> 0.8; vs the others 0 -> max 0.8
    em, f1 = best_over_golds("Clara, California", golds)
    assert em == 0.0 and f1 == pytest.approx(0.8)


def test_score_averages_in_percent_and_counts_unanswered() -> None:
    golds = [("q1", ["Denver Broncos"]), ("q2", ["gold"]), ("q3", ["x y"])]
    res = score(golds, {"q1": "Denver Broncos", "q2": "golden"})
    # q1: EM 1, F1 1; q2: 0, 0; q3 unanswered: 0, 0 -> EM 100/3, F1 100/3
    assert res.exact_match == pytest.approx(100 / 3)
    assert res.f1 == pytest.approx(100 / 3)
    assert res.unanswered == ["q3"] and res.total == 3
    assert res.as_dict() == {"exact_match": res.exact_match, "f1": res.f1}


def test_empty_prediction_scores_zero_but_counts() -> None:
    res = score([("q1", ["Denver"]), ("q2", ["Denver"])], {"q1": "", "q2": "denver"})
    assert res.exact_match == pytest.approx(50.0) and res.f1 == pytest.approx(50.0)
    assert res.unanswered == []


def test_extra_predictions_are_ignored() -> None:
    res = score([("q1", ["a b"])], {"q1": "b", "not-in-dev": "anything"})
    assert res.total == 1 and res.f1 == pytest.approx(100.0)  # "a b" -> "b" after articles


# -- files -----------------------------------------------------------------------------------


def _write(tmp: Path, name: str, obj: object) -> Path:
    path = tmp / name
    path.write_text(json.dumps(obj))
    return path


def test_bad_files_are_one_line_errors_naming_the_field(tmp_path: Path) -> None:
    dev = _write(
        tmp_path,
        "dev.json",
        {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [{}]}]}]},
    )
    with pytest.raises(
        SquadFileError, match=r"dev\.json: field data\[0\]\.paragraphs\[0\]\.qas\[0\]\.id: missing"
    ):
        load_squad(dev)
    dev2 = _write(tmp_path, "dev2.json", {"version": "1.1", "data": {}})
    with pytest.raises(SquadFileError, match=r"dev2\.json: field data: expected a list"):
        load_squad(dev2)
    pred = _write(tmp_path, "pred.json", {"q1": ["list"]})
    with pytest.raises(SquadFileError, match=r"pred\.json: field q1: expected a string, got list"):
        load_predictions(pred)
    pred2 = _write(tmp_path, "pred2.json", ["q1"])
    with pytest.raises(SquadFileError, match=r"pred2\.json: expected a JSON object"):
        load_predictions(pred2)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SquadFileError, match=r"broken\.json: not valid JSON"):
        load_predictions(tmp_path / "broken.json")


# -- the real dev file -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev():
    return load_squad(shared_path("squad", "dev-v1.1.json"))


def test_dev_file_counts(dev) -> None:
    assert dev.version == "1.1"
    assert dev.counts() == {"articles": 48, "paragraphs": 2067, "questions": 10570}


def test_gold_answers_score_100(dev) -> None:
    golds = dev.golds()
    res = score(golds, {qid: answers[0] for qid, answers in golds})
    assert res.exact_match == 100.0 and res.f1 == 100.0 and not res.unanswered


def test_last_gold_answers_expose_the_empty_answer_rule(dev) -> None:
    """Three dev questions have a gold answer "." (empty once normalised). Predicting it gives
    EM 1 (empty equals empty) but F1 0 (no common token), on every gold. Only the last such
    gold is also the last answer of its question (57340d124776f419006617bf), so predicting the
    last gold answer loses exactly 1/10,570 of the F1: 100 - 100/10570 = 99.990539...
    (the official definition gives the same)."""
    golds = dev.golds()
    res = score(golds, {qid: answers[-1] for qid, answers in golds})
    assert res.exact_match == 100.0
    assert res.f1 == pytest.approx(100.0 - 100.0 / 10570, abs=1e-9)
    assert best_over_golds(".", dict(golds)["57340d124776f419006617bf"]) == (1.0, 0.0)


def _drop_first_word(answers: list[str]) -> str:
    return " ".join(answers[0].split()[1:])


def test_first_word_dropped_rule_hand_worked_sample(dev) -> None:
    """The first six dev questions, worked by hand (see the comments)."""
    golds = dev.golds()[:6]
    preds = {qid: _drop_first_word(a) for qid, a in golds}
    per_q = [best_over_golds(preds[qid], a) for qid, a in golds]
    expected_f1 = [
        2 / 3,  # "Broncos" vs "Denver Broncos": P 1, R 1/2
        2 / 3,  # "Panthers" vs "Carolina Panthers"
        0.8,  # "clara california" vs "santa clara california": P 1, R 2/3 (best of 3 golds)
        2 / 3,  # "Broncos" again
        0.0,  # "gold" -> "": empty prediction
        2 / 3,  # '"golden anniversary"' -> 'anniversary"' -> "anniversary" vs "golden anniversary"
    ]
    assert [f for _, f in per_q] == pytest.approx(expected_f1)
    assert all(em == 0.0 for em, _ in per_q)
    res = score(golds, preds)
    assert res.f1 == pytest.approx(100 * (4 * 2 / 3 + 0.8) / 6)  # 57.78
    assert res.exact_match == 0.0


def test_first_word_dropped_rule_whole_dev_file(dev) -> None:
    """Whole-file figures of the same rule. They equal what an independent implementation of
    the official evaluate-v1.1.py definition gave on the same predictions (run outside this
    repository when the scorer was written): EM 15.061494796594134, F1 55.62500081973202. EM is
    not 0 because a first gold answer may start with an article ("the Broncos" -> "Broncos"
    normalise alike), or another gold answer may be the first one without its first word."""
    golds = dev.golds()
    res = score(golds, {qid: _drop_first_word(a) for qid, a in golds})
    assert res.exact_match == pytest.approx(15.061494796594134, abs=1e-9)
    assert res.f1 == pytest.approx(55.62500081973202, abs=1e-9)


def test_cli_prints_the_official_dict(tmp_path: Path, dev, capsys) -> None:
    from perfsuite.cli import main

    golds = dev.golds()
    preds = {qid: a[0] for qid, a in golds[1:]}  # the first question unanswered
    pred_path = _write(tmp_path, "pred.json", preds)
    assert main(["eval", "squad", dev.path, str(pred_path)]) == 0
    out, err = capsys.readouterr()
    n = len(golds)
    assert json.loads(out) == {
        "exact_match": pytest.approx(100 * (n - 1) / n),
        "f1": pytest.approx(100 * (n - 1) / n),
    }
    assert f"Unanswered question {golds[0][0]} will receive score 0." in err
    assert f"1 of {n} questions unanswered (scored 0)" in err


def test_cli_bad_predictions_is_one_line(tmp_path: Path, capsys) -> None:
    from perfsuite.cli import main

    dev = tiny_dev(tmp_path)
    pred = _write(tmp_path, "pred.json", {"q1": 3})
    assert main(["eval", "squad", str(dev), str(pred)]) == 2
    err = capsys.readouterr().err
    assert err == f"perfsuite: error: {pred}: field q1: expected a string, got int\n"


def test_cli_warns_like_the_official_script_on_another_version(tmp_path: Path, capsys) -> None:
    from perfsuite.cli import main

    dev = tiny_dev(tmp_path, version="2.0")
    pred = _write(tmp_path, "pred.json", {"q1": "the Denver"})
    assert main(["eval", "squad", str(dev), str(pred)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"exact_match": 100.0, "f1": 100.0}
    assert "Evaluation expects v-1.1, but got dataset with v-2.0" in err


def tiny_dev(tmp: Path, version: str = "1.1") -> Path:
    return _write(
        tmp,
        "dev.json",
        {
            "version": version,
            "data": [
                {
                    "title": "t",
                    "paragraphs": [
                        {
                            "context": "Denver won.",
                            "qas": [
                                {"id": "q1", "answers": [{"text": "Denver", "answer_start": 0}]}
                            ],
                        }
                    ],
                }
            ],
        },
    )
