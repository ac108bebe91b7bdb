"""`imagenet`: the DAWNBench ImageNet task (93% top-5 on the 50,000 validation images) with
ResNet-50 v1.5 (`resnet.py` here).

Data: the standard image-folder layout (`train/<wnid>/*.JPEG`, `val/<wnid>/*.JPEG`), streamed
by `ImageFolderSource` with decoding and augmentation in worker processes (random-resized crop
and flip for training; resize 256 + centre crop 224 for evaluation), or `--synthetic` random
224x224 inputs for throughput alone. Each evaluation records top-1 and top-5. The recipe
(recipe.py): label smoothing 0.1, warm-up + cosine schedule, no weight decay on
batch-norm and bias, and progressive resizing as the `progressive_resize` switch.

Switches: every shared one (bf16, fp16, tf32, channels_last, compile, lr_rule), plus
label_smoothing, tta (flip averaging at evaluation) and progressive_resize. Not `data`: the set
never fits in device memory (1.28 M images are about 193 GB as 224x224 uint8), so batches
always come from the streaming loader.
"""

from __future__ import annotations

from typing import Any

from perfsuite.hostinfo import usable_cpus
from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.data import Batch, SyntheticSource
from perfsuite.workloads.imagefolder import ImageFolderSource
from perfsuite.workloads.imagenet import recipe as recipes
from perfsuite.workloads.progressive import describe as describe_stages
from perfsuite.workloads.progressive import size_for
from perfsuite.workloads.switches import COMMON
from perfsuite.workloads.transforms import IMAGENET_MEAN, IMAGENET_STD, imagenet_transforms

TOPK = (1, 5)


class ResizableSynthetic(SyntheticSource):
    """Synthetic inputs whose training batches can be cropped to a smaller size, so progressive
    resizing changes the step's work on synthetic data too (random pixels: cropping costs only
    a copy, and is inside the clock like any data preparation)."""

    train_size: int | None = None

    def set_train_size(self, size: int | None) -> None:
        full = self._x[0].shape[-1]
        if size is not None and not 1 <= size <= full:
            raise ValueError(f"train image size {size}: synthetic inputs are {full} px")
        self.train_size = size

    def train_batches(self, batch_size: int, generator: Any) -> Any:
        size = self.train_size
        for batch in super().train_batches(batch_size, generator):
            if size is None:
                yield batch
            else:
                x = batch.inputs[0][..., :size, :size].contiguous()
                yield Batch((x,), batch.target, batch.size)


class ImageNetWorkload(Workload):
    name = "imagenet"
    task = "imagenet"
    metric = "top5"
    default_threshold = 0.93
    input_shape = (3, 224, 224)
    num_classes = 1000
    dataset = "ImageNet-1k (ILSVRC 2012: 1,281,167 train / 50,000 val images, 1000 classes)"
    needs_data_dir = True
    train_size, eval_size = 1_281_167, 50_000
    switches = COMMON | {"label_smoothing", "tta", "progressive_resize"}
    image_stats = (IMAGENET_MEAN, IMAGENET_STD)  # for to_images / from_images (perfsuite eval)

    def presets(self) -> dict[str, Recipe]:
        return {name: recipes.preset(name) for name in recipes.PRESETS}

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return recipes.preset("dawnbench")

    def configure(self, recipe: Recipe) -> None:
        recipes.check(recipe)
        super().configure(recipe)
        self.stages = recipes.resize_stages(recipe)

    def build_model(self, recipe: Recipe | None = None) -> Any:
        """ResNet-50; with the recipe's `zero_init_residual` (on in the presets) the last
        batch norm of every bottleneck starts at scale 0, so each block starts as the identity
        (Goyal et al.; it steadies the first, large-learning-rate steps). Same FLOPs."""
        from torch import nn

        from perfsuite.workloads.imagenet.resnet import Bottleneck, resnet50

        model = resnet50(self.num_classes)
        if bool((recipe or recipes.PRESETS["dawnbench"]).extra.get("zero_init_residual", True)):
            for block in model.modules():
                if isinstance(block, Bottleneck):
                    nn.init.zeros_(block.bn3.weight)
        return model

    def model_name(self, recipe: Recipe) -> str:
        head = "" if self.num_classes == 1000 else f", {self.num_classes}-class head"
        return f"ResNet-50 v1.5{head}"

    def notes(self) -> list[str]:
        """Record flags: an evaluation subset, and what progressive resizing does to the
        one-step FLOP count."""
        out = []
        if self.num_classes <= max(TOPK):
            out.append(
                f"{self.num_classes} classes: top-5 counts every class, so it is 1 whatever the "
                "model predicts"
            )
        limit = int(self._extra().get("eval_limit", 0) or 0)
        if limit:
            out.append(
                f"evaluated on a subset: eval_limit={limit} held-out examples; accuracy is not "
                "the benchmark's (50,000 validation images)"
            )
        if getattr(self, "stages", None):
            out.append(
                f"progressive resizing ({describe_stages(self.stages)}): work.flops_per_step "
                f"was counted on a {self.stages[0].size} px step (epoch 1); steps of epochs at "
                "other sizes do more or less work, so FLOP/s from it apply to epoch-1-sized "
                "steps only"
            )
        return out

    # -- data ----------------------------------------------------------------------------

    def _extra(self) -> dict[str, Any]:
        return dict(self.recipe.extra) if self.recipe else dict(recipes.PRESETS["dawnbench"].extra)

    def load_data(self, data_dir: str | None, device: Any) -> Any:
        from pathlib import Path

        if not data_dir:
            raise ValueError(
                "imagenet needs --data-dir DIR holding train/<wnid>/*.JPEG and val/<wnid>/*.JPEG "
                "(or --synthetic for throughput without data)"
            )
        ex = self._extra()
        workers = int(ex.get("num_workers", -1))
        if workers < 0:
            workers = max(1, usable_cpus() - 1)
        source = ImageFolderSource(
            Path(data_dir),
            *imagenet_transforms(
                int(ex.get("image_size", 224)),
                int(ex.get("eval_resize", 256)),
                float(ex.get("min_scale", 0.08)),
            ),
            device=device,
            num_workers=workers,
            train_limit=int(ex.get("train_limit", 0) or 0) or None,
            eval_limit=int(ex.get("eval_limit", 0) or 0) or None,
        )
        self.class_names = tuple(source.classes)
        if len(source.classes) != 1000:
            # A class subset (Imagenette, a test tree): the head is sized to it, and the task
            # is renamed so that its runs never share a board with 1000-class ImageNet.
            self.num_classes = len(source.classes)
            self.task = f"imagenet-{self.num_classes}class"
            source.description += (
                f"; {self.num_classes} classes, not the benchmark's 1000: the model's head is "
                f"sized to them and the task is named {self.task}"
            )
        return self._with_stages(source)

    def synthetic_data(self, device: Any, seed: int) -> Any:
        """Random inputs at the recipe's image size, 1000 classes. The pool holds two batches
        (at least 32 images, at most 1024), not the base class's 4096: 4096 ImageNet-sized
        float32 images are 2.5 GB, which a CPU host may not spare."""
        ex = self._extra()
        size = int(ex.get("image_size", 224))
        batch = self.recipe.batch_size if self.recipe else 256
        source = ResizableSynthetic(
            ((3, size, size),),
            self.num_classes,
            device,
            num_train=int(ex.get("train_limit", 0) or 0) or self.train_size,
            num_eval=int(ex.get("eval_limit", 0) or 0) or self.eval_size,
            seed=seed,
            pool=min(1024, max(32, 2 * batch)),
        )
        return self._with_stages(source)

    def _with_stages(self, source: Any) -> Any:
        """Epoch 1's size set before the warm-up and the FLOP count; the description says
        which schedule is in force."""
        stages = getattr(self, "stages", None)
        if stages:
            source.set_train_size(size_for(stages, 1))
            source.description += f"; progressive resizing: {describe_stages(stages)}"
        return source

    def on_epoch_start(self, state: Any, data: Any, epoch: int) -> None:
        stages = getattr(self, "stages", None)
        if stages:
            data.set_train_size(size_for(stages, epoch))

    # -- evaluation ----------------------------------------------------------------------

    def evaluate(self, model: Any, data: Any, batch_size: int = 0) -> dict[str, float]:
        """Top-1 and top-5 (fractions) on the held-out set, in batches of the training batch
        size (the base class's 1024 ImageNet images would need several GB of activations).
        With fewer than 5 classes, top-5 counts every class and is 1."""
        import torch

        size = batch_size or (self.recipe.batch_size if self.recipe else 256)
        model.eval()
        hits = dict.fromkeys(TOPK, 0)
        seen = 0
        with torch.no_grad():
            for b in data.eval_batches(size):
                logits = self.predict(model, *b.inputs)
                top = logits.topk(min(max(TOPK), logits.shape[1]), dim=1).indices
                match = top == b.target[:, None]
                for k in TOPK:
                    hits[k] += int(match[:, :k].any(dim=1).sum())
                seen += b.size
        model.train()
        n = seen or 1
        return {f"top{k}": hits[k] / n for k in TOPK}

    def predict(self, model: Any, *inputs: Any) -> Any:
        """Logits; with the tta switch, plus those of the horizontally flipped image."""
        (x,) = inputs
        logits = model(x)
        if self.recipe is not None and bool(self.recipe.extra.get("tta_flip", False)):
            logits = logits + model(x.flip(3))
        return logits
