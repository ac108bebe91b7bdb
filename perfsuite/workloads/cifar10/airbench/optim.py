"""The optimisation side of the airbench family: Lookahead, the label-smoothed summed loss,
Nesterov SGD with decoupled hyper-parameters and its triangular schedule, and their
construction from a recipe (the Muon alternative is muon.py).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from perfsuite.workloads.base import Recipe

# ----------------------------------------------------------------------------------------------
# Lookahead (EMA of the weights, copied back)
# ----------------------------------------------------------------------------------------------


class Lookahead:
    """Every `every` steps from `start_step` on, an exponential moving average of all float
    state (parameters and BN running statistics) is moved toward the network,
    ema <- rho * ema + (1 - rho) * net, and then copied back into the network (net <- ema).

    Unlike a plain EMA kept aside for evaluation, the copy-back makes the optimizer continue
    from the averaged point (Lookahead, Zhang et al. 2019); the paper found it pays only
    together with fast BN momentum. rho ramps up over training,
    rho = base**every * (step / total_steps)**power, so averaging is weak early (fast progress)
    and strong at the end (noise averaged out). At `start_step` the EMA is initialized to the
    network. `sync` copies the EMA back without moving it; call it at the end of every epoch
    so the evaluated network is the averaged one.
    """

    def __init__(
        self,
        total_steps: int,
        *,
        start_step: int = 0,
        every: int = 5,
        base: float = 0.95,
        power: float = 3.0,
    ) -> None:
        if total_steps < 1 or every < 1:
            raise ValueError("Lookahead: total_steps and every must be >= 1")
        self.total_steps = total_steps
        self.start_step = start_step
        self.every = every
        self.base = base
        self.power = power
        self.ema: dict[str, torch.Tensor] | None = None
        self.steps = 0  # optimizer steps taken (the caller's counter, kept with the EMA)

    def decay(self, step: int) -> float:
        return self.base**self.every * min(1.0, step / self.total_steps) ** self.power

    @staticmethod
    def _float_state(model: nn.Module) -> dict[str, torch.Tensor]:
        return {k: v for k, v in model.state_dict().items() if v.is_floating_point()}

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> bool:
        """Call after the optimizer step numbered `step` (1-based). Returns True when the
        network was changed (or the EMA initialized)."""
        if step < self.start_step or step % self.every:
            return False
        state = self._float_state(model)
        if self.ema is None:
            self.ema = {k: v.detach().clone() for k, v in state.items()}
            return True
        rho = self.decay(step)
        for k, v in state.items():
            self.ema[k].lerp_(v, 1.0 - rho)
            v.copy_(self.ema[k])
        return True

    def state_dict(self) -> dict[str, object]:
        """The averaged weights (references; callers copy) and the step count."""
        return {"ema": self.ema, "steps": self.steps}

    def load_state_dict(self, state: dict[str, object]) -> None:
        ema = state["ema"]
        self.ema = None if ema is None else {k: v.clone() for k, v in ema.items()}  # type: ignore[attr-defined]
        self.steps = int(state["steps"])  # type: ignore[call-overload]

    @torch.no_grad()
    def sync(self, model: nn.Module) -> None:
        """net <- ema (no-op before the EMA exists)."""
        if self.ema is None:
            return
        for k, v in self._float_state(model).items():
            v.copy_(self.ema[k])


# ----------------------------------------------------------------------------------------------
# Optimizer, schedule and loss
# ----------------------------------------------------------------------------------------------


def fast_loss(logits: torch.Tensor, target: torch.Tensor, label_smoothing: float = 0.2):
    """Label-smoothed cross-entropy SUMMED over the batch: the learning rates of
    `make_fast_optimizer` are per 1024 examples and assume this scale (a mean-reduced loss
    would need the lr multiplied by the batch size)."""
    return F.cross_entropy(logits, target, label_smoothing=label_smoothing, reduction="sum")


def triangle(step: int, total: int, start: float, peak_at: float, end: float) -> float:
    """Piecewise-linear multiplier: `start` at step 0, 1.0 at step int(peak_at * total), `end`
    at step `total` (held there after)."""
    peak = int(peak_at * total)
    step = min(max(step, 0), total)
    if step < peak:
        return start + (1.0 - start) * step / peak
    if total == peak:
        return 1.0
    return 1.0 + (end - 1.0) * (step - peak) / (total - peak)


def make_fast_optimizer(
    model: nn.Module,
    epochs: float,
    steps_per_epoch: int,
    *,
    batch_size: int = 1024,
    lr: float = 11.5,
    momentum: float = 0.85,
    weight_decay: float = 0.0153,
    bias_lr_scale: float = 64.0,
    lr_start: float = 0.2,
    peak_at: float = 0.23,
    lr_end: float = 0.07,
) -> tuple[torch.optim.SGD, torch.optim.lr_scheduler.LambdaLR]:
    """Nesterov SGD over the trainable parameters, in the paper's decoupled parametrization.

    `lr` is the step per 1024 examples of summed loss, independent of momentum: PyTorch's lr
    is lr / (1024 * (1 + 1 / (1 - momentum))), undoing Nesterov's gain of 1 + 1/(1 - m) for
    steady gradients. `weight_decay` is the shrink per 1024 examples, independent of lr:
    PyTorch's weight_decay is set per group so that, at the schedule's peak, lr_group * wd_group
    equals weight_decay * batch_size / (1024 * (1 + 1 / (1 - momentum))) (the decay follows the
    lr schedule like the step does). BatchNorm shifts (the only
    trainable BN parameters) get `bias_lr_scale` x the lr but the same decay per step: they
    are few and would otherwise move too slowly to keep up. The multiplier follows
    `triangle(lr_start -> 1 at peak_at -> lr_end)` over ceil(epochs * steps_per_epoch) steps;
    scheduler.step() once per optimizer step.
    """
    if steps_per_epoch < 1 or epochs <= 0:
        raise ValueError("make_fast_optimizer: epochs and steps_per_epoch must be positive")
    gain = 1024 * (1 + 1 / (1 - momentum))
    base_lr = lr / gain
    decay_per_step = weight_decay * batch_size / gain
    bn_shifts, others = [], []
    for mod in model.modules():
        own = [p for p in mod.parameters(recurse=False) if p.requires_grad]
        (bn_shifts if isinstance(mod, nn.modules.batchnorm._BatchNorm) else others).extend(own)
    bias_lr = base_lr * bias_lr_scale
    opt = torch.optim.SGD(
        [
            {"params": bn_shifts, "lr": bias_lr, "weight_decay": decay_per_step / bias_lr},
            {"params": others, "lr": base_lr, "weight_decay": decay_per_step / base_lr},
        ],
        momentum=momentum,
        nesterov=True,
    )
    total = math.ceil(epochs * steps_per_epoch)

    def factor(step: int) -> float:
        return triangle(step, total, lr_start, peak_at, lr_end)

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def total_steps(epochs: float, steps_per_epoch: int) -> int:
    return math.ceil(epochs * steps_per_epoch)


def optimizer_from_recipe(
    model: nn.Module, recipe: Recipe, steps_per_epoch: int
) -> tuple[torch.optim.SGD, torch.optim.lr_scheduler.LambdaLR]:
    """`make_fast_optimizer` with a recipe's fields (see presets.py)."""
    ex = recipe.extra
    return make_fast_optimizer(
        model,
        recipe.epochs,
        steps_per_epoch,
        batch_size=recipe.batch_size,
        lr=recipe.lr,
        momentum=recipe.momentum,
        weight_decay=recipe.weight_decay,
        bias_lr_scale=float(ex.get("bias_lr_scale", 64.0)),
        lr_start=float(ex.get("lr_start", 0.2)),
        peak_at=recipe.warmup_fraction,
        lr_end=float(ex.get("lr_end", 0.07)),
    )


def lookahead_from_recipe(recipe: Recipe, steps_per_epoch: int) -> Lookahead:
    ex = recipe.extra
    return Lookahead(
        total_steps(recipe.epochs, steps_per_epoch),
        start_step=int(ex.get("lookahead_start_epoch", 3)) * steps_per_epoch,
        every=int(ex.get("lookahead_every", 5)),
        base=float(ex.get("lookahead_base", 0.95)),
        power=float(ex.get("lookahead_power", 3.0)),
    )
