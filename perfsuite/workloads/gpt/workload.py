"""`gpt`: a GPT-style language model trained to a validation loss (nats per token, lower is
better), with model FLOPs utilization (MFU) in the record. See docs/gpt.md.

The data (data.py), the model (model.py), Muon (muon.py) and the recipes (presets.py) are
modules of their own; this one wires them into the workload seam: data and vocabulary, model,
optimizers and schedule, the training step (gradient clipping), the evaluation on fixed
validation windows, the model FLOPs the MFU is taken from, and batch-1 generation latency with
a KV cache (generate.py).
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Phase, Recipe, Workload
from perfsuite.workloads.data import Batch
from perfsuite.workloads.gpt.data import WindowSource, load_tokens, synthetic_tokens
from perfsuite.workloads.gpt.generate import generation_section
from perfsuite.workloads.gpt.mfu import model_flops_section
from perfsuite.workloads.gpt.presets import TECHNIQUES, GroupSchedule, presets
from perfsuite.workloads.state import TrainState, no_phase
from perfsuite.workloads.switches import COMMON

# fp16 needs a loss scaler built around one torch optimizer; bf16 is the low precision here.
# channels_last concerns 4-D images only.
SWITCHES = (COMMON - {"channels_last", "fp16"}) | set(TECHNIQUES)


class GPTWorkload(Workload):
    name = "gpt"
    task = "gpt"
    metric = "val_loss"
    direction = "lower"
    default_threshold = 1.47
    dataset = "character-level text or uint16 token shards (--data-dir), or --synthetic"
    switches = frozenset(SWITCHES)
    scheduler_interval = "step"  # warm-up then cosine, per optimizer step

    def __init__(self) -> None:
        self.download = False
        self.vocab_size: int | None = None
        self.chars = ""

    # -- recipe ----------------------------------------------------------------------------

    def presets(self) -> dict[str, Recipe]:
        return presets()

    def default_recipe(self, device: str = "cpu") -> Recipe:
        name = "cpu" if str(device).startswith("cpu") else "shakespeare_char"
        return presets()[name]

    def configure(self, recipe: Recipe) -> None:
        self.default_threshold = float(recipe.extra.get("target", self.default_threshold))
        self.config(recipe)  # a bad shape is a one-line error before anything is loaded
        super().configure(recipe)

    def _recipe(self, recipe: Recipe | None = None) -> Recipe:
        return recipe or self.recipe or self.default_recipe()

    def config(self, recipe: Recipe | None = None) -> Any:
        from perfsuite.workloads.gpt.model import GPTConfig

        x = self._recipe(recipe).extra
        return GPTConfig(
            vocab_size=int(self.vocab_size or x["vocab_size"]),
            block_size=int(x["block_size"]),
            n_layer=int(x["n_layer"]),
            n_head=int(x["n_head"]),
            n_embd=int(x["n_embd"]),
            dropout=float(x["dropout"]),
            bias=bool(x["bias"]),
            rotary=bool(x["rotary"]),
            qk_norm=bool(x["qk_norm"]),
            relu2=bool(x["relu2"]),
            untied_head=bool(x["untied_head"]),
            softcap=float(x["softcap_value"]) if x["softcap"] else 0.0,
        )

    def model_name(self, recipe: Recipe) -> str:
        c = self.config(recipe)
        on = [t for t in TECHNIQUES if recipe.extra.get(t)]
        return (
            f"GPT, {c.n_layer} layers x {c.n_embd} wide, {c.n_head} heads, block {c.block_size}, "
            f"vocabulary {c.vocab_size}" + (f" (+{', +'.join(on)})" if on else "")
        )

    def build_model(self, recipe: Recipe | None = None) -> Any:
        from perfsuite.workloads.gpt.model import GPT

        return GPT(self.config(recipe))

    # -- data ------------------------------------------------------------------------------

    def _source(self, tokens: Any, device: Any) -> Any:
        r = self._recipe()
        self.vocab_size, self.chars = tokens.vocab_size, tokens.chars
        return WindowSource(
            tokens,
            int(r.extra["block_size"]),
            r.batch_size,
            int(r.extra["iters_per_epoch"]),
            int(r.extra["eval_batches"]),
            device,
        )

    def load_data(self, data_dir: str | None, device: Any) -> Any:
        from pathlib import Path

        if not data_dir:
            raise ValueError(
                "gpt needs --data-dir (a text file, a folder of *.txt, or a folder with "
                "train.bin and val.bin) or --synthetic"
            )
        tokens = load_tokens(data_dir)
        stem = Path(data_dir).stem or Path(data_dir).name
        kind = "char" if tokens.kind == "char" else "tokens"
        self.task = f"gpt-{stem}-{kind}"  # losses on different data are not comparable
        return self._source(tokens, device)

    def synthetic_data(self, device: Any, seed: int) -> Any:
        r = self._recipe()
        t, b = int(r.extra["block_size"]), r.batch_size
        self.task = "gpt-synthetic"
        tokens = synthetic_tokens(
            int(r.extra["vocab_size"]),
            max(65_536, 4 * b * (t + 1)),
            max(8_192, 2 * (t + 1)),
            seed,
        )
        return self._source(tokens, device)

    # -- training --------------------------------------------------------------------------

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        """AdamW (weight decay on matrices and embeddings, none on 1-D parameters), or with
        `muon` on: Muon for the 2-D matrices inside the blocks and AdamW for the rest. One
        schedule for all: linear warm-up, then cosine to lr x `min_lr_fraction`."""
        import torch

        from perfsuite.workloads.gpt.muon import Combined, Muon

        x = recipe.extra
        hidden = {id(p) for p in model.blocks.parameters() if p.ndim == 2} if x["muon"] else set()
        rest = [p for p in model.parameters() if id(p) not in hidden]
        adamw = torch.optim.AdamW(
            [
                {"params": [p for p in rest if p.ndim >= 2], "weight_decay": recipe.weight_decay},
                {"params": [p for p in rest if p.ndim < 2], "weight_decay": 0.0},
            ],
            lr=recipe.lr,
            betas=(float(x["beta1"]), float(x["beta2"])),
        )
        opt: Any = adamw
        if hidden:
            muon = Muon(
                [p for p in model.blocks.parameters() if id(p) in hidden],
                lr=float(x["muon_lr"]),
                momentum=float(x["muon_momentum"]),
            )
            opt = Combined(muon, adamw)
        total = max(1, recipe.epochs * steps_per_epoch)
        warm = int(recipe.warmup_fraction * total)
        return opt, GroupSchedule(opt, total, warm, float(x["min_lr_fraction"]))

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten())

    def train_step(self, state: TrainState, batch: Batch, phase: Phase = no_phase) -> Any:
        """Forward, loss, backward, gradient clipping to `grad_clip` (global norm; 0: off),
        optimizer step (the runner steps the schedule: `scheduler_interval`)."""
        import torch

        with phase("forward"), state.autocast():
            loss = self.loss(state.model(*batch.inputs), batch.target, state.recipe)
        state.optimizer.zero_grad(set_to_none=True)
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            clip = float(state.recipe.extra.get("grad_clip", 0.0) or 0.0)
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(state.module.parameters(), clip)
            state.optimizer.step()
        return loss.detach()

    # -- evaluation ------------------------------------------------------------------------

    def evaluate(self, model: Any, data: Any, batch_size: int = 1024) -> dict[str, float]:
        """Mean next-token cross-entropy (nats per token) over the fixed validation windows,
        in batches of the training batch size (the evaluation cost is known: eval_batches
        forward passes)."""
        import torch

        was = model.training
        model.eval()
        total, n = 0.0, 0
        r = self._recipe()
        with torch.no_grad():
            for b in data.eval_batches(r.batch_size):
                logits = self.predict(model, *b.inputs)
                total += float(self.loss(logits, b.target, r)) * b.size
                n += b.size
        model.train(was)
        return {"val_loss": total / max(1, n)}

    def features(self, model: Any, *inputs: Any) -> Any:
        raise NotImplementedError("gpt: a language model has no classifier features to probe")

    # -- MFU and generation ----------------------------------------------------------------

    def model_flops(self, module: Any, recipe: Recipe) -> dict[str, Any] | None:
        return model_flops_section(module, recipe.batch_size)

    def generation_latency(self, model: Any, data: Any, backend: Any) -> dict[str, Any]:
        x = self._recipe().extra
        return generation_section(
            model,
            data,
            backend,
            prompt=int(x["gen_prompt"]),
            new_tokens=int(x["gen_tokens"]),
            prompts=int(x["gen_prompts"]),
        )
