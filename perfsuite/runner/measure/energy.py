"""Energy read from the hardware's own counters: NVML on NVIDIA GPUs, RAPL on CPUs.

Why counters and not power samples: the telemetry thread samples power every half second,
and integrating those by hand misses everything between samples. NVML's
`nvmlDeviceGetTotalEnergyConsumption` (mJ since the driver loaded, Volta and later) and the
kernel's RAPL files (`/sys/class/powercap/intel-rapl:N/energy_uj`, uJ, wrapping at
`max_energy_range_uj`) are accumulated by the hardware itself, so two reads give the energy
between them. RAPL covers whole CPU packages (every process on them, not only this one).

A meter is read at the edges of an interval (an epoch of the training clock, an inference
pass); a read costs microseconds and happens outside the clock. Nothing here may lose a run:
a meter that cannot be opened or fails later is reported as absent with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from perfsuite.record import quantity

POWERCAP = Path("/sys/class/powercap")
_PACKAGE = re.compile(r"^intel-rapl:\d+$")  # top-level (package) domains, not sub-domains


class EnergyUnavailable(RuntimeError):
    """No energy counter: the message is the reason stated in the record."""


class NvmlEnergy:
    """One GPU's total energy counter through pynvml (or an object with the same calls)."""

    def __init__(self, pynvml: Any, index: int) -> None:
        self.nv = pynvml
        self.index = index
        try:
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.read()  # NotSupported (pre-Volta, some vGPUs) surfaces here
        except Exception as exc:
            raise EnergyUnavailable(
                f"NVML has no energy counter for GPU {index} ({exc or type(exc).__name__})"
            ) from None
        self.source = f"NVML nvmlDeviceGetTotalEnergyConsumption, GPU {index}"
        self.scope = f"GPU {index} board (all processes on it)"

    def read(self) -> int:
        """The counter in mJ."""
        return int(self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def joules(self, start: Any, end: Any) -> float:
        return (int(end) - int(start)) / 1000.0


class RaplEnergy:
    """The package domains of RAPL under `root`, summed; wrap-around handled per domain."""

    def __init__(self, root: Path = POWERCAP) -> None:
        if not root.is_dir():
            raise EnergyUnavailable(f"{root} does not exist: this host exposes no RAPL counters")
        self.domains: list[tuple[Path, int, str]] = []
        for d in sorted(root.iterdir()):
            if not _PACKAGE.match(d.name):
                continue
            try:
                span = int((d / "max_energy_range_uj").read_text())
                int((d / "energy_uj").read_text())
            except (OSError, ValueError) as exc:
                raise EnergyUnavailable(f"{d}/energy_uj: not readable ({exc})") from None
            name = (d / "name").read_text().strip() if (d / "name").is_file() else d.name
            self.domains.append((d / "energy_uj", span, name))
        if not self.domains:
            raise EnergyUnavailable(f"{root} has no intel-rapl:N package domains")
        names = ", ".join(n for _, _, n in self.domains)
        self.source = f"RAPL {root}/intel-rapl:N/energy_uj ({names})"
        self.scope = "whole CPU package(s): every process on them, not only this run"

    def read(self) -> list[int]:
        """Each package's counter in uJ."""
        return [int(path.read_text()) for path, _, _ in self.domains]

    def joules(self, start: Any, end: Any) -> float:
        """Sum over packages; a counter below its start wrapped once at max_energy_range_uj
        (an interval long enough to wrap twice cannot be told apart: see `wrap_j`)."""
        total = 0
        for (_, span, _), a, b in zip(self.domains, start, end, strict=True):
            total += b - a if b >= a else span - a + b
        return total / 1e6

    @property
    def wrap_j(self) -> float:
        """Energy after which the smallest counter wraps (intervals must stay below it)."""
        return min(span for _, span, _ in self.domains) / 1e6


def open_meter(gpu_index: int | None, powercap: Path = POWERCAP, pynvml: Any = None) -> Any:
    """The meter for the device in use: NVML for a GPU, RAPL for the CPU.

    Raises EnergyUnavailable with the reason when there is none."""
    if gpu_index is not None:
        if pynvml is None:
            try:
                import pynvml as nv
            except ImportError:
                raise EnergyUnavailable(
                    "nvidia-ml-py not installed: no GPU energy counter"
                ) from None
            pynvml = nv
        return NvmlEnergy(pynvml, gpu_index)
    return RaplEnergy(powercap)


class EnergyClock:
    """Energy over intervals (start/stop pairs), like the training clock's epochs.

    Every failure is caught: `reason` then says why and later reads are skipped, so the run
    goes on without energy."""

    def __init__(self, meter: Any = None, reason: str | None = None) -> None:
        self.meter = meter
        self.reason = reason
        self.intervals_j: list[float] = []
        self._start: Any = None

    @classmethod
    def for_device(cls, gpu_index: int | None, **kwargs: Any) -> EnergyClock:
        try:
            return cls(open_meter(gpu_index, **kwargs))
        except EnergyUnavailable as exc:
            return cls(None, str(exc))
        except Exception as exc:  # an unexpected reader error must not lose the run
            return cls(None, f"energy counter could not be opened: {exc}")

    @property
    def available(self) -> bool:
        return self.meter is not None

    def start(self) -> None:
        if self.meter is None:
            return
        try:
            self._start = self.meter.read()
        except Exception as exc:
            self._fail(exc)

    def stop(self) -> float | None:
        """Energy (J) since `start`, appended to `intervals_j`; None when unavailable."""
        if self.meter is None or self._start is None:
            return None
        try:
            joules = self.meter.joules(self._start, self.meter.read())
        except Exception as exc:
            self._fail(exc)
            return None
        self._start = None
        self.intervals_j.append(joules)
        return joules

    def _fail(self, exc: Exception) -> None:
        self.reason = f"energy counter stopped answering ({exc or type(exc).__name__})"
        self.meter = None
        self.intervals_j = []

    def describe(self) -> dict[str, Any]:
        """Where the numbers come from (every energy figure in the record carries this)."""
        if self.meter is None:
            return {"available": False, "reason": self.reason, "source": None, "scope": None}
        out = {
            "available": True,
            "reason": None,
            "source": self.meter.source,
            "scope": self.meter.scope,
        }
        if hasattr(self.meter, "wrap_j"):
            out["wrap_j"] = self.meter.wrap_j
        return out


def training_energy(clock: EnergyClock, reached_epoch: int | None) -> dict[str, Any]:
    """The record's `energy` section: per-epoch energy over the training clock, and energy to
    accuracy (epochs 1..the threshold epoch) when the run reached its threshold."""
    out: dict[str, Any] = clock.describe()
    per = list(clock.intervals_j) if clock.available else []
    out["per_epoch_j"] = per or None
    out["train_total"] = None
    out["to_accuracy"] = None
    if not per:
        if out["available"]:
            out["reason"] = "no timed epoch was measured"
        return out
    edges = "read right before and right after each timed epoch (outside the clock)"
    out["train_total"] = quantity(
        sum(per), "J", "measured", f"{out['source']}: {edges}, summed over {len(per)} epoch(s)"
    )
    if reached_epoch is None:
        out["to_accuracy_note"] = "threshold not reached: no energy to accuracy"
    elif reached_epoch <= len(per):
        out["to_accuracy"] = quantity(
            sum(per[:reached_epoch]),
            "J",
            "measured",
            f"{out['source']}: {edges}, summed over epochs 1-{reached_epoch} (the training "
            "clock up to the threshold)",
        )
    return out
