"""What one `perfsuite run` is asked to do: the options the CLI, the Python API, studies and
benches fill in and `runner.routes.run.run_workload` reads.

This dataclass is the one source of a run's options. Each field's `Flag` metadata says how it
is written on the command line (flag, value kind, help) and whether a study file sets it (its
key); `perfsuite run`'s flags, the run flags of `perfsuite study`, the study file's `[run]`
table and the options of a study's runs are all built from it (perfsuite/cli/run_flags.py,
perfsuite/study/spec.py). A new option is one field here.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

from perfsuite.workloads.user import absolute_spec

# How a flag's value is read and checked. The CLI maps each kind to its argparse converter and
# a study file to its TOML check; a kind names the rule, so both apply the same one.
VALUE_KINDS = (
    "text",  # any string
    "int",  # any integer
    "positive_int",  # an integer >= 1
    "nonnegative_float",  # a finite number >= 0
    "instance_type",  # a cloud instance type name (no path, no spaces)
    "choice",  # one of `choices`
    "switch",  # no value: the flag sets True (False with `negate`)
    "list",  # repeatable: each use adds one item
    "threshold",  # a target metric; its range depends on the workload's metric
)


@dataclass(frozen=True)
class Flag:
    """How one run option is written on a command line and in a study file."""

    name: str  # "--epochs"; a name without dashes is a positional argument
    help: str
    value: str = "text"  # one of VALUE_KINDS
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    negate: bool = False  # "--no-capture": the flag turns the option off
    hidden: bool = False  # internal: accepted, not shown in --help
    alias: str | None = None  # a deprecated spelling, still accepted
    # Where a study holds it: a key of the study file's [run] table (every run of the study
    # shares it), "top:KEY" for a study-level field with its own meaning (seed of the first
    # repeat, switches added to every configuration), None when a study does not set it.
    study: str | None = None
    study_help: str | None = None  # the help in a study, where its meaning there differs


def _flag(*args: Any, **kw: Any) -> dict[str, Flag]:
    """A field's metadata: its Flag."""
    return {"flag": Flag(*args, **kw)}


@dataclass
class RunOptions:
    workload: str = field(
        metadata=_flag(
            "workload",
            "workload name (digits, cifar10, imagenet, squad) or your own: FILE.py:CLASS or "
            "package.module:CLASS",
            study_help="workload name or FILE.py:CLASS",
        ),
    )
    framework: str = field(
        default="pytorch",
        metadata=_flag(
            "--framework",
            "framework the workload is written in (default pytorch; tensorflow: digits and "
            "cifar10, needs pip install perfsuite[tensorflow]; docs/tensorflow.md)",
            value="choice",
            choices=("pytorch", "tensorflow"),
            study="framework",
        ),
    )  # runner/frameworks/parts.py
    data_dir: str | None = field(
        default=None,
        metadata=_flag(
            "--data-dir",
            "dataset folder (cifar10: pickle or image-folder layout; squad: train-v1.1.json "
            "and dev-v1.1.json)",
            study="data_dir",
        ),
    )
    out: str = field(
        default="runs", metadata=_flag("--out", "parent folder for run folders (default: runs)")
    )
    threshold: float | None = field(
        default=None,
        metadata=_flag(
            "--threshold",
            "target metric as a fraction, e.g. 0.94, or in percent: 94%%; for a "
            "lower-is-better metric (a loss: gpt's val_loss) its value, e.g. 1.47",
            value="threshold",
            study="top:threshold",
            study_help="target metric as a fraction (0.98) or percent (98%%)",
        ),
    )
    epochs: int | None = field(
        default=None,
        metadata=_flag(
            "--epochs",
            "upper bound on epochs (also the schedule length)",
            value="positive_int",
            study="epochs",
        ),
    )
    batch_size: int | None = field(
        default=None,
        metadata=_flag(
            "--batch-size",
            "training batch size",
            value="positive_int",
            study="batch_size",
            study_help="batch size where the study does not set one",
        ),
    )
    seed: int = field(
        default=0,
        metadata=_flag(
            "--seed",
            "random seed (default 0)",
            value="int",
            study="top:seed",
            study_help="seed of the first repeat (default 0)",
        ),
    )
    device: str = field(
        default="cpu", metadata=_flag("--device", "cpu or cuda[:N] (default cpu)", study="device")
    )
    keep_going: bool = field(
        default=False,
        metadata=_flag(
            "--all-epochs",
            "train all epochs instead of stopping at the first evaluation >= threshold",
            value="switch",
            alias="--keep-going",
            study="keep_going",
        ),
    )
    capture: bool = field(
        default=True,
        metadata=_flag(
            "--no-capture",
            "turn instrumentation off (no FLOP count, profiler, telemetry, ceilings)",
            value="switch",
            negate=True,
            study="capture",
        ),
    )
    recipe: str | None = field(
        default=None,
        metadata=_flag(
            "--recipe",
            "named recipe preset of the workload (e.g. dawnbench, cpu)",
            study="recipe",
        ),
    )
    overrides: list[str] = field(
        default_factory=list,
        metadata=_flag(
            "--set",
            "override a recipe field, e.g. --set lr=0.2 --set width=0.25 (repeatable)",
            value="list",
            metavar="KEY=VALUE",
            study="set",
        ),
    )
    switches: list[str] = field(
        default_factory=list,
        metadata=_flag(
            "--switch",
            "optimization switch, comma-separated or repeated: bf16, fp16, tf32=on|off, "
            "channels_last, compile[=MODE], lr_rule=linear|sqrt|none, label_smoothing=X, "
            "tta=on|off, data=device|workers, layout=nhwc|nchw (tensorflow) (see "
            "--list-switches)",
            value="list",
            metavar="NAME[=VALUE]",
            study="top:switches",
            study_help="switch applied to every configuration (comma-separated or repeated)",
        ),
    )
    synthetic: bool = field(
        default=False,
        metadata=_flag(
            "--synthetic",
            "random inputs of the workload's shape instead of its data (throughput only)",
            value="switch",
            study="synthetic",
        ),
    )
    threads: int | None = field(
        default=None,
        metadata=_flag(
            "--threads", "torch intra-op threads", value="positive_int", study="threads"
        ),
    )
    counters: str | None = field(
        default=None,
        metadata=_flag(
            "--counters",
            "after training, collect GPU hardware counters for the profiled window: ncu "
            "(Nsight Compute on a replay child) or cupti (torch.profiler range profiler, falls "
            "back to ncu where the PyTorch build lacks it); NVIDIA only",
            value="choice",
            choices=("ncu", "cupti"),
        ),
    )
    instance_type: str | None = field(
        default=None,
        metadata=_flag(
            "--instance-type",
            "cloud instance type, for cost analysis",
            value="instance_type",
        ),
    )
    price_per_hour: float | None = field(
        default=None,
        metadata=_flag(
            "--price",
            "USD per hour of this machine, for cost analysis",
            value="nonnegative_float",
        ),
    )
    group: dict[str, Any] | None = None  # repeats and studies: {"id", "index", "size"}
    download: bool = field(
        default=False,
        metadata=_flag("--download", "download the dataset if absent", value="switch"),
    )
    telemetry_interval_s: float = 0.5
    # at least this many profiled steps...
    profile_steps: int = field(
        default=3,
        metadata=_flag(
            "--profile-steps",
            "at least this many training steps in the timeline window (0: no window; default 3)",
            value="int",
        ),
    )
    # ...and at least this much of the run's clock
    profile_seconds: float = field(
        default=1.0,
        metadata=_flag(
            "--profile-seconds",
            "raise the window's step count until it covers S seconds of the measured step "
            "time, so per-op times of short steps are reproducible (0: exactly "
            "--profile-steps; default 1.0)",
            value="nonnegative_float",
            metavar="S",
        ),
    )
    measure_peaks: bool = field(
        default=True,
        metadata=_flag(
            "--no-peaks",
            "do not micro-benchmark device peaks when none are cached",
            value="switch",
            negate=True,
        ),
    )
    inference_repeats: int = 100  # 0: no inference measurement (else the rule's whole set)
    inference_limit: int | None = field(
        default=None,
        metadata=_flag(
            "--inference-limit",
            "after training, time batch-1 inference on only the first N evaluation examples "
            "(recorded as partial, never the DAWNBench figure; default: the whole set)",
            value="positive_int",
            metavar="N",
        ),
    )
    progress: bool = field(
        default=True, metadata=_flag("--quiet", "no progress bar", value="switch", negate=True)
    )
    eval_from: int = field(
        default=1,
        metadata=_flag(
            "--eval-from",
            "evaluate from this epoch on (default 1); skipping early evaluations saves wall "
            "time and can only make the time to accuracy later, never earlier",
            value="positive_int",
            metavar="EPOCH",
            study="eval_from",
        ),
    )  # first epoch that is evaluated (the last one always is)
    # >0: replay that many steps in an NVTX range for ncu; no record (a counters collector's
    # child)
    replay_steps: int = field(
        default=0,
        metadata=_flag(
            "--replay-window",
            "replay N steps of the profile window, write no record",
            value="int",
            hidden=True,
        ),
    )
    nproc: int = field(
        default=1,
        metadata=_flag(
            "--nproc",
            "data-parallel training in N processes (DistributedDataParallel through "
            "torchrun; gloo on CPU, NCCL on GPUs); per-rank batch = --batch-size, global = N x "
            "it; see docs/studies.md (default 1: one process, no torchrun)",
            value="int",
        ),
    )  # >1: runner/launch/distributed.py

    def __post_init__(self) -> None:
        # A FILE.py workload is kept absolute, so the record's config names the same file
        # from any directory (perfsuite eval, infer), whoever filled these options in.
        self.workload = absolute_spec(self.workload)


def option_flags() -> list[tuple[Field, Flag]]:
    """(field, flag) of every option written on a command line, in declaration order."""
    return [(f, f.metadata["flag"]) for f in fields(RunOptions) if "flag" in f.metadata]


def default_of(f: Field) -> Any:
    """The default value of an option field (a fresh one for a list)."""
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None if f.default is MISSING else f.default
