"""The `squad` workload: loader, tokenizer offsets, split rules, span decoding, evaluation
through the official scorer, and a few training steps through the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.workloads.squad.data import SquadFileError, load_squad
from perfsuite.workloads.squad.examples import build_vocabulary, choose_split, encode
from perfsuite.workloads.squad.score import exact_match
from perfsuite.workloads.squad.tokens import PAD, UNK, Vocabulary, tokenize
from tests.conftest import shared_path

FACTS = [
    ("Paris is the capital of France.", "What is the capital of France?", "Paris"),
    ("The Nile flows north into the Mediterranean Sea.", "Where does the Nile flow?", "north"),
    ("Ada Lovelace wrote the first program in 1843.", "When did Ada write it?", "1843"),
    ("Mount Everest, in Nepal, is 8,849 m high.", "How high is Everest?", "8,849 m"),
]


def tiny_squad(path: Path, articles: int = 5, version: str = "1.1") -> Path:
    """A SQuAD-shaped file: `articles` articles of 2 paragraphs, each paragraph holding every
    fact (in a rotated order) and one question per fact, answer offsets computed here."""
    data = []
    n = 0
    for a in range(articles):
        paragraphs = []
        for p in range(2):
            order = FACTS[(a + p) % len(FACTS) :] + FACTS[: (a + p) % len(FACTS)]
            context = " ".join(f for f, _, _ in order)
            qas = []
            for _fact, question, answer in order:
                qas.append(
                    {
                        "id": f"q{n}",
                        "question": question,
                        "answers": [{"text": answer, "answer_start": context.index(answer)}],
                    }
                )
                n += 1
            paragraphs.append({"context": context, "qas": qas})
        data.append({"title": f"article {a}", "paragraphs": paragraphs})
    path.write_text(json.dumps({"version": version, "data": data}))
    return path


# -- loader and tokenizer ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev():
    return load_squad(shared_path("squad", "dev-v1.1.json"))


def test_loader_on_a_generated_file(tmp_path: Path) -> None:
    f = load_squad(tiny_squad(tmp_path / "dev-v1.1.json", articles=3))
    assert f.counts() == {"articles": 3, "paragraphs": 6, "questions": 24}
    par, q = next(f.questions())
    assert par.context[q.answers[0].start :].startswith(q.answers[0].text)


def test_loader_refuses_duplicate_ids_and_missing_answers(tmp_path: Path) -> None:
    base = {"context": "c", "qas": [{"id": "x", "question": "?", "answers": []}]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [base]}]}))
    with pytest.raises(
        SquadFileError, match=r"field data\[0\]\.paragraphs\[0\]\.qas\[0\]\.answers: no gold"
    ):
        load_squad(path)
    dup = {"context": "c", "qas": [{"id": "x", "answers": [{"text": "c", "answer_start": 0}]}] * 2}
    path.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [dup]}]}))
    with pytest.raises(SquadFileError, match=r"qas\[1\]\.id: duplicate question id 'x'"):
        load_squad(path)


def test_tokenize_offsets_round_trip() -> None:
    text = "Levi's Stadium, in 1843:  ÉCOLE-normale!"
    t = tokenize(text)
    assert t.words == (
        "levi",
        "'",
        "s",
        "stadium",
        ",",
        "in",
        "1843",
        ":",
        "école",
        "-",
        "normale",
        "!",
    )
    assert all(text[s:e].lower() == w for w, s, e in zip(t.words, t.starts, t.ends, strict=True))
    first, last = t.char_span_to_tokens(text.index("Stadium"), text.index("1843") + 4)
    assert (first, last) == (3, 6)
    assert t.span_text(text, first, last) == "Stadium, in 1843"
    assert t.char_span_to_tokens(len(text), len(text) + 3) is None  # past the end: no token


def test_dev_answers_round_trip_through_token_spans(dev) -> None:
    """Every gold answer of the dev file maps to a token span (none is lost), and the span's
    context text is the answer itself for 34,650 of the 34,726 answers; the other 76 start or
    end inside a word ('gold' of 'golden', '8' of '18'), which word-level spans cannot cut."""
    total = same = 0
    for art in dev.articles:
        for par in art.paragraphs:
            toks = tokenize(par.context)
            for q in par.questions:
                for a in q.answers:
                    span = toks.char_span_to_tokens(a.start, a.start + len(a.text))
                    assert span is not None
                    total += 1
                    same += toks.span_text(par.context, *span) == a.text
    assert (total, same) == (34726, 34650)


def test_vocabulary_order_and_padding() -> None:
    v = Vocabulary([["b", "a", "b"], ["c", "a", "b"]], max_size=4, min_count=1)
    assert v.words == ["<pad>", "<unk>", "b", "a"]  # b (3) before a (2); c cut by max_size
    assert v.ids(["a", "c", "b"], 5) == [3, UNK, 2, PAD, PAD]
    assert v.ids(["a", "b", "a"], 2) == [3, 2]
    assert Vocabulary([["x", "y", "y"]], 10, min_count=2).words == ["<pad>", "<unk>", "y"]


# -- split rules ------------------------------------------------------------------------------


def test_dev_only_is_an_error_unless_smoke(tmp_path: Path) -> None:
    tiny_squad(tmp_path / "dev-v1.1.json")
    with pytest.raises(SquadFileError, match=r"train-v1\.1\.json: file not found.*smoke_split"):
        choose_split(tmp_path, 0.0)
    split = choose_split(tmp_path, 0.6)
    assert split.smoke and len(split.train) == 3 and len(split.eval) == 2
    assert "SMOKE TEST" in split.description and "not a benchmark result" in split.description
    with pytest.raises(ValueError, match="smoke_split"):
        choose_split(tmp_path, 1.5)


def test_train_and_dev_files_are_the_benchmark_split(tmp_path: Path) -> None:
    tiny_squad(tmp_path / "dev-v1.1.json", articles=2)
    tiny_squad(tmp_path / "train-v1.1.json", articles=4)
    split = choose_split(tmp_path, 0.0)
    assert not split.smoke and not split.notes
    assert (len(split.train), len(split.eval)) == (4, 2)


def test_real_dev_smoke_split_and_encoding() -> None:
    split = choose_split(shared_path("squad"), 0.8)
    assert (len(split.train), len(split.eval)) == (38, 10)  # round(0.8 x 48) = 38 articles
    vocab = build_vocabulary(split.train, 5000, 2)
    enc = encode(split.eval, vocab, 64, 16, training=False, limit=50)
    assert len(enc.qids) == 50 and len(enc.context[0]) == 64 and len(enc.question[0]) == 16


def test_training_encoding_gives_the_answer_tokens(tmp_path: Path) -> None:
    f = load_squad(tiny_squad(tmp_path / "t.json", articles=1))
    vocab = build_vocabulary(f.articles, 100, 1)
    enc = encode(f.articles, vocab, 200, 12, training=True)
    assert enc.skipped == 0 and len(enc.qids) == 8
    for (first, last), toks, text, qid in zip(
        enc.spans, enc.tokens, enc.texts, enc.qids, strict=True
    ):
        gold = next(q for _, q in f.questions() if q.qid == qid).answers[0].text
        assert toks.span_text(text, first, last) == gold
    cut = encode(f.articles, vocab, 5, 12, training=True)  # answers past token 5 are skipped
    assert cut.skipped > 0 and all(last < 5 for _, last in cut.spans)


# -- model pieces ----------------------------------------------------------------------------


def test_best_spans_respects_order_and_length() -> None:
    import torch

    from perfsuite.workloads.squad.model import best_spans

    logits = torch.full((1, 2, 6), -5.0)
    logits[0, 0, 4] = 5.0  # best start at 4
    logits[0, 1, 1] = 6.0  # best end at 1: before the start, not allowed
    logits[0, 1, 5] = 2.0
    assert best_spans(logits, max_answer=3).tolist() == [[4, 5]]
    # one-token answers: (1, 1) scores -5 + 6 = 1, beating (4, 4) at 5 - 5 = 0
    assert best_spans(logits, max_answer=1).tolist() == [[1, 1]]


def _workload(tmp_path: Path, **extra: object):
    from perfsuite.workloads.squad.workload import SquadWorkload

    tiny_squad(tmp_path / "dev-v1.1.json", articles=5)
    wl = SquadWorkload()
    recipe = wl.default_recipe()
    recipe.extra.update(d_model=16, heads=2, layers=1, model_layers=1, smoke_split=0.6)
    recipe.extra.update(extra)
    wl.configure(recipe)
    return wl, wl.load_data(str(tmp_path), "cpu")


def test_evaluation_of_gold_spans_is_f1_one(tmp_path: Path) -> None:
    """The path predicted span -> context text -> official scorer: logits peaked at the gold
    tokens give F1 = EM = 1; an off-by-one end loses exactly what the scorer says."""
    import torch

    wl, data = _workload(tmp_path)
    ex = data.eval_examples
    golds = dict(data.golds)
    spans = []
    for toks, text, qid in zip(ex.tokens, ex.texts, ex.qids, strict=True):
        gold = golds[qid][0]
        start = text.index(gold)
        spans.append(toks.char_span_to_tokens(start, start + len(gold)))

    class Oracle(torch.nn.Module):
        def __init__(self, shift: int) -> None:
            super().__init__()
            self.shift, self.i = shift, 0

        def forward(self, context, question, in_question):
            n = context.shape[0]
            logits = torch.full((n, 2, context.shape[1]), -10.0)
            for row in range(n):
                first, last = spans[self.i + row]
                logits[row, 0, first] = 10.0
                logits[row, 1, min(last + self.shift, context.shape[1] - 1)] = 10.0
            self.i += n
            return logits

    assert wl.evaluate(Oracle(0), data) == {"f1": 1.0, "exact_match": 1.0}
    answers = wl.answers(Oracle(1), data)
    expect = [exact_match(answers[q], golds[q][0]) for q in ex.qids]
    assert wl.evaluate(Oracle(1), data)["exact_match"] == pytest.approx(sum(expect) / len(expect))
    assert sum(expect) < len(expect)  # one token too many is not an exact match


def test_data_source_batches_hold_two_inputs(tmp_path: Path) -> None:
    import torch

    wl, data = _workload(tmp_path)
    batch = next(data.train_batches(4, torch.Generator().manual_seed(0)))
    context, question, asked = batch.inputs
    assert context.dtype == torch.long and question.shape == (4, 40)
    assert asked.shape == context.shape and set(asked.unique().tolist()) <= {0, 1}
    assert batch.target.shape == (4, 2) and batch.size == 4
    assert data.num_train == 24 and data.num_eval == 16  # 3 train / 2 eval articles x 8
    assert any("SMOKE TEST" in f for f in data.flags)
    model = wl.build_model()
    assert wl.predict(model, *data.sample(3).inputs).shape == (3, 2)


@pytest.mark.slow
def test_runner_run_reaches_f1_and_records_flags_and_flops(tmp_path: Path) -> None:
    """Through the runner on a generated set whose held-out articles ask the same questions
    about the same facts in another order: the reader must learn to find answers (F1 >= 0.75
    on held-out paragraphs within 8 epochs; on the held-out set of this construction it
    reached 1.0 after 5 epochs when written), and the record must say SMOKE TEST."""
    from perfsuite.record import load_record
    from perfsuite.runner.launch.executor import outcome
    from perfsuite.runner.routes.run import RunOptions, run_workload

    tiny_squad(tmp_path / "dev-v1.1.json", articles=10)
    run_dir = run_workload(
        RunOptions(
            workload="squad",
            data_dir=str(tmp_path),
            out=str(tmp_path / "runs"),
            epochs=8,
            batch_size=8,
            threads=1,
            overrides=[
                "smoke_split=0.6",
                "d_model=32",
                "heads=2",
                "layers=1",
                "model_layers=1",
                "dropout=0.0",
                "lr=0.003",
                "max_question=12",
            ],
            measure_peaks=False,
            profile_steps=0,  # no timeline window: FLOPs are what this test checks
            inference_repeats=3,
            progress=False,
        )
    )
    rec = load_record(run_dir / "run.json")
    assert rec["task"]["metric"] == "f1" and rec["task"]["threshold"] == 0.75
    assert rec["task"]["name"] == "squad" and "SMOKE TEST" in rec["task"]["dataset"]
    assert any(f.startswith("SMOKE TEST") for f in rec["flags"])
    assert outcome(run_dir).endswith("[SMOKE TEST: not a benchmark result]")  # the CLI's line
    assert rec["status"] == "reached" and rec["checkpoint"]["metric"] == "f1"
    last = rec["evaluations"][-1]["metrics"]
    assert last["f1"] >= 0.75 and 0.0 <= last["exact_match"] <= last["f1"] <= 1.0
    work = rec["work"]
    assert work["flops_per_step"]["value"] > 0 and work["dtype"] == "float32"
    assert work["unknown_ops"] == []  # every op of the step has a FLOP formula
    families = {o["family"] for o in work["per_op"]}
    assert {"embedding", "matmul", "normalization", "softmax_loss"} <= families
    assert rec["extra"]["steps_per_epoch"] == 6  # 6 articles x 8 questions / batch 8


def test_flops_on_the_bare_workload_is_a_one_line_error(capsys) -> None:
    from perfsuite.cli import main

    assert main(["flops", "workload:squad"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "perfsuite run squad" in err


def test_in_question_flags_mark_context_words_asked_about(tmp_path: Path) -> None:
    f = load_squad(tiny_squad(tmp_path / "t.json", articles=1))
    vocab = build_vocabulary(f.articles, 100, 1)
    enc = encode(f.articles, vocab, 200, 12, training=False, limit=1)
    # "What is the capital of France?" against "Paris is the capital of France. ..."
    words = enc.tokens[0].words
    flagged = {w for w, flag in zip(words, enc.in_question[0], strict=False) if flag}
    assert flagged == {"is", "the", "capital", "of", "france"}  # not "?" nor "paris"


def test_synthetic_data_has_the_real_shapes_and_scores(tmp_path: Path) -> None:
    import torch

    from perfsuite.workloads.squad.workload import SquadWorkload

    wl = SquadWorkload()
    recipe = wl.default_recipe()
    recipe.extra.update(d_model=16, heads=2, layers=1, model_layers=1, train_limit=16)
    recipe.extra.update(max_context=24, max_question=6, vocab_size=50)
    wl.configure(recipe)
    data = wl.synthetic_data("cpu", seed=0)
    assert data.kind == "synthetic" and (data.num_train, data.num_eval) == (16, 256)
    context, question, asked = next(data.train_batches(4, torch.Generator())).inputs
    assert context.shape == (4, 24) and question.shape == (4, 6) and asked.shape == (4, 24)
    assert int(context.min()) >= 2 and int(context.max()) < 50  # no padding, no unknown id
    ex = data.eval_examples
    first, last = data.test_y[0].tolist()
    assert data.golds[0][1] == [ex.tokens[0].span_text(ex.texts[0], first, last)]
    result = wl.evaluate(wl.build_model(), data)
    assert set(result) == {"f1", "exact_match"} and 0.0 <= result["f1"] <= 1.0


def test_a_limited_batch_one_view_scores_only_the_questions_asked(tmp_path: Path) -> None:
    """`infer --limit N` on SQuAD: F1 over the N questions predicted, not N right answers
    divided by every question of the set (the unasked ones are not wrong answers)."""
    import torch

    from perfsuite.runner.measure.inference import BatchOneView

    wl, data = _workload(tmp_path)
    ex = data.eval_examples
    golds = dict(data.golds)
    spans = []
    for toks, text, qid in zip(ex.tokens, ex.texts, ex.qids, strict=True):
        start = text.index(golds[qid][0])
        spans.append(toks.char_span_to_tokens(start, start + len(golds[qid][0])))

    class Oracle(torch.nn.Module):
        i = 0

        def forward(self, context, question, in_question):
            logits = torch.full((context.shape[0], 2, context.shape[1]), -10.0)
            for row in range(context.shape[0]):
                logits[row, 0, spans[self.i + row][0]] = 10.0
                logits[row, 1, spans[self.i + row][1]] = 10.0
            self.i += context.shape[0]
            return logits

    n = 3
    assert len(golds) > n
    view = BatchOneView(data, limit=n)
    assert view.partial and not BatchOneView(data).partial
    assert wl.evaluate(Oracle(), view) == {"f1": 1.0, "exact_match": 1.0}  # was 3/len(golds)
    assert wl.evaluate(Oracle(), BatchOneView(data)) == {"f1": 1.0, "exact_match": 1.0}
