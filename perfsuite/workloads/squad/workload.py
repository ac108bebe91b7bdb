"""`squad`: extractive question answering on SQuAD v1.1, DAWNBench's third task (0.75 F1).

The data are the official JSON files in `--data-dir` (train-v1.1.json trains, every question
of dev-v1.1.json is judged); nothing is downloaded: the tokenizer and the vocabulary are built
here from the training split, and the reader (model.py) starts from random weights. The
evaluation is the official v1.1 scorer (score.py) on the predicted answer text of every
question; the run's metric `f1` is its F1 as a fraction (the record's convention), with
`exact_match` beside it.

Only the dev file at hand: `--set smoke_split=0.8` (or `--recipe smoke`) trains on the first
80% of the dev articles and evaluates on the rest. That is a smoke test of the pipeline, and
the record says so in `task.dataset`, `data.description` and `flags`; its F1 is not a SQuAD
result. See docs/squad.md.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Recipe, Workload, one_cycle_schedule
from perfsuite.workloads.data import InMemorySource
from perfsuite.workloads.squad.examples import build_vocabulary, choose_split, encode, synthetic
from perfsuite.workloads.squad.score import score
from perfsuite.workloads.switches import COMMON


class SquadSource(InMemorySource):
    """Token ids on the device (inputs: context ids, question ids, context-word-in-question
    flags; target: start/end token), plus what evaluation needs to turn predicted spans back
    into answer text and score them."""

    def __init__(self, train: Any, evaluation: Any, golds: list, device: Any, **kw: Any) -> None:
        import torch

        def ids(rows: list[list[int]]) -> Any:
            return torch.tensor(rows, dtype=torch.long).to(device)

        super().__init__(
            (ids(train.context), ids(train.question), ids(train.in_question)),
            ids([list(s) for s in train.spans]),
            (ids(evaluation.context), ids(evaluation.question), ids(evaluation.in_question)),
            ids([list(s) for s in evaluation.spans]),
            **kw,
        )
        self.eval_examples = evaluation  # qids, context tokens and texts, in eval order
        self.golds = golds  # (question id, gold texts) of exactly the evaluated questions
        self.flags: list[str] = []


class SquadWorkload(Workload):
    name = "squad"
    task = "squad"  # the DAWNBench importer's task name: imports rank on the same board
    metric = "f1"
    default_threshold = 0.75
    dataset = "SQuAD v1.1 (train-v1.1.json trains; the 10,570 questions of dev-v1.1.json judge)"
    needs_data_dir = True
    switches = COMMON - {"channels_last"}  # no 4-D tensors: the switch would do nothing
    scheduler_interval = "step"  # one_cycle_schedule is per optimizer step
    vocab_size: int | None = None

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return Recipe(
            epochs=10,
            batch_size=64,
            lr=1e-3,
            weight_decay=0.01,
            warmup_fraction=0.1,
            extra={
                "d_model": 128,
                "heads": 4,
                "layers": 2,
                "model_layers": 2,
                "dropout": 0.1,
                "max_context": 256,
                "max_question": 40,
                "max_answer": 15,
                "vocab_size": 30000,
                "min_count": 2,
                "smoke_split": 0.0,
                "train_limit": 0,
                "eval_limit": 0,
                "eval_batch": 128,
            },
        )

    def presets(self) -> dict[str, Recipe]:
        """`smoke`: a CPU-minutes smoke test on the dev file alone (labelled in the record)."""
        r = self.default_recipe()
        r.epochs, r.batch_size, r.lr, r.warmup_fraction = 3, 32, 2e-3, 0.1
        r.extra.update(
            d_model=64,
            layers=1,
            model_layers=1,
            max_context=160,
            smoke_split=0.8,
            train_limit=1000,
            eval_limit=300,
        )
        return {"smoke": r}

    def _x(self, key: str) -> Any:
        return (self.recipe or self.default_recipe()).extra[key]

    def model_name(self, recipe: Recipe) -> str:
        x = recipe.extra
        return (
            f"BiDAF-style transformer reader, d {x['d_model']}, {x['layers']}+"
            f"{x['model_layers']} blocks"
        )

    def build_model(self, recipe: Recipe | None = None) -> Any:
        from perfsuite.workloads.squad.model import Reader

        x = (recipe or self.recipe or self.default_recipe()).extra
        if self.vocab_size is None:
            raise ValueError(
                "the reader's vocabulary comes from the training data, so it has no model "
                "before load_data; its FLOPs per step are counted by `perfsuite run squad` "
                "(work.flops_per_step)"
            )
        return Reader(
            self.vocab_size,
            d=int(x["d_model"]),
            heads=int(x["heads"]),
            layers=int(x["layers"]),
            model_layers=int(x["model_layers"]),
            max_len=max(int(x["max_context"]), int(x["max_question"])),
            dropout=float(x["dropout"]),
        )

    # -- data ----------------------------------------------------------------------------

    def load_data(self, data_dir: str | None, device: Any) -> SquadSource:
        if not data_dir:
            raise ValueError("squad needs --data-dir DIR holding train-v1.1.json and dev-v1.1.json")
        split = choose_split(data_dir, float(self._x("smoke_split")))
        vocab = build_vocabulary(split.train, int(self._x("vocab_size")), int(self._x("min_count")))
        self.vocab_size = len(vocab)
        lc, lq = int(self._x("max_context")), int(self._x("max_question"))
        train = encode(split.train, vocab, lc, lq, True, int(self._x("train_limit")))
        evaluation = encode(split.eval, vocab, lc, lq, False, int(self._x("eval_limit")))
        if not train.qids or not evaluation.qids:
            raise ValueError(f"squad: {data_dir}: no usable training or evaluation questions")
        wanted = set(evaluation.qids)
        golds = [
            (q.qid, [a.text for a in q.answers])
            for art in split.eval
            for par in art.paragraphs
            for q in par.questions
            if q.qid in wanted
        ]
        cut = sum(1 for t in evaluation.tokens if len(t) > len(evaluation.context[0]))
        description = (
            f"{split.description}; {len(train.qids):,} training questions "
            f"({train.skipped:,} skipped: answer not alignable or past {lc} tokens), "
            f"{len(evaluation.qids):,} evaluated; contexts cut at {len(evaluation.context[0])} "
            f"tokens ({cut:,} evaluated contexts longer), vocabulary {len(vocab):,} words "
            "from the training split"
        )
        source = SquadSource(train, evaluation, golds, device, description=description)
        source.flags.extend(split.notes)
        if int(self._x("eval_limit")):
            source.flags.append(
                f"evaluated on a subset: eval_limit={self._x('eval_limit')} questions "
                f"({len(golds):,} scored), not every question of the evaluation file"
            )
        return source

    def synthetic_data(self, device: Any, seed: int) -> SquadSource:
        """Random token ids of the configured shapes (`max_context` x `max_question`, the full
        `vocab_size`): throughput without data; `train_limit` examples (default 2,048) per
        epoch, 256 evaluated. The evaluation path runs as usual; its F1 is chance level."""
        lc, lq = int(self._x("max_context")), int(self._x("max_question"))
        vocab, span = int(self._x("vocab_size")), int(self._x("max_answer"))
        n = int(self._x("train_limit")) or 2048
        train, _ = synthetic(n, lc, lq, vocab, span, seed)
        evaluation, golds = synthetic(256, lc, lq, vocab, span, seed + 1)
        self.vocab_size = vocab
        description = (
            f"synthetic: random token ids, contexts {lc} and questions {lq} tokens, vocabulary "
            f"{vocab:,} ({n:,} train / 256 eval per epoch); F1 is chance level"
        )
        source = SquadSource(train, evaluation, golds, device, description=description)
        source.kind = "synthetic"
        return source

    # -- training ------------------------------------------------------------------------

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        """AdamW (no weight decay on biases, norms and position/word embeddings' 1-D params),
        linear warm-up then linear decay."""
        import torch

        decay = [p for p in model.parameters() if p.ndim > 1]
        no_decay = [p for p in model.parameters() if p.ndim <= 1]
        opt = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": recipe.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=recipe.lr,
        )
        return opt, one_cycle_schedule(opt, recipe, steps_per_epoch)

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        from perfsuite.workloads.squad.model import span_loss

        return span_loss(logits, target)

    # -- evaluation ----------------------------------------------------------------------

    def predict(self, model: Any, *inputs: Any) -> Any:
        """(B, 2) predicted start/end context tokens: the best span of at most
        `max_answer` tokens."""
        from perfsuite.workloads.squad.model import best_spans

        return best_spans(model(*inputs), int(self._x("max_answer")))

    def answers(self, model: Any, data: SquadSource) -> dict[str, str]:
        """Question id -> predicted answer text (the context's own characters)."""
        import torch

        ex = data.eval_examples
        out: dict[str, str] = {}
        model.eval()
        with torch.no_grad():
            i = 0
            for b in data.eval_batches(int(self._x("eval_batch"))):
                for start, end in self.predict(model, *b.inputs).tolist():
                    out[ex.qids[i]] = ex.tokens[i].span_text(ex.texts[i], start, end)
                    i += 1
        model.train()
        return out

    def evaluate(self, model: Any, data: Any, batch_size: int = 1024) -> dict[str, float]:
        """The official SQuAD v1.1 F1 and exact match of the predicted answers (fractions)."""
        answers = self.answers(model, data)
        golds = data.golds
        if getattr(data, "partial", False):  # a --limit view: the unasked questions are not 0s
            golds = [(qid, gold) for qid, gold in golds if qid in answers]
        result = score(golds, answers)
        return {"f1": result.f1 / 100.0, "exact_match": result.exact_match / 100.0}
