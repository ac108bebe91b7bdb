"""CPU peaks and the machine's load: the best reading per thread count is kept (a busy one
raises it, never lowers it), convolutions and matmuls both measure the compute roof, old caches
still read, the spec from the CPU flags stands beside them. No real benchmark runs: the
measurements and os.getloadavg are replaced, and the cache lives in a temporary directory."""

from __future__ import annotations

import json
import os

import pytest

from perfsuite.ceilings import ceilings_for, load_cache, measure_device
from perfsuite.ceilings import measure as measure_mod
from perfsuite.ceilings import resolve as resolve_mod
from perfsuite.ceilings.cpuspec import cpu_spec
from perfsuite.ceilings.load import judge, load_text
from perfsuite.ceilings.measure import Measurement
from perfsuite.cli import main

NAME = "Test CPU"


class Bench:
    """Fake benchmarks: the FLOP/s to report next, and how many ran."""

    def __init__(self) -> None:
        self.flops = 4.0e10
        self.conv_flops = 3.0e10  # below the matmul unless a test raises it
        self.calls = 0  # matmuls and copies
        self.conv_calls = 0

    def matmul(self, device: str, dtype: str, mode: str = "quick") -> Measurement:
        self.calls += 1
        return Measurement("matmul", dtype, self.flops, "FLOP/s", 512, 5, 0.05, mode)

    def conv(self, device: str, dtype: str, mode: str = "quick") -> Measurement:
        self.conv_calls += 1
        shape = (8, 128, 32, 32, 128, 3)
        return Measurement("conv", dtype, self.conv_flops, "FLOP/s", 8, 5, 0.05, mode, 1, shape)

    def copy(self, device: str, mode: str = "quick") -> Measurement:
        self.calls += 1
        return Measurement("copy", None, 1.0e10, "byte/s", 64 << 20, 5, 0.01, mode)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A temporary cache, a 2-CPU machine, torch 2.5 with 2 threads, fake benchmarks; the
    test sets the load with `env.load = x`."""
    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path))
    bench = Bench()
    bench.load = 0.1  # type: ignore[attr-defined]
    bench.threads = 2  # type: ignore[attr-defined]
    monkeypatch.setattr(measure_mod, "measure_matmul", bench.matmul)
    monkeypatch.setattr(measure_mod, "measure_conv", bench.conv)
    monkeypatch.setattr(measure_mod, "measure_bandwidth", bench.copy)
    monkeypatch.setattr(os, "getloadavg", lambda: (bench.load, 0.0, 0.0))  # type: ignore[attr-defined]
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(resolve_mod, "_env", lambda: ("2.5.0", bench.threads))  # type: ignore[attr-defined]
    monkeypatch.setattr(resolve_mod, "device_name", lambda device: NAME)
    unknown = cpu_spec(NAME, set(), None, 1)  # this machine's flags play no part here
    monkeypatch.setattr(resolve_mod, "this_cpu_spec", lambda name, threads: unknown)
    return bench


def _cached_env(threads: int = 2) -> dict:
    """The cached measurements of that thread count ({} flops, no bandwidth when none)."""
    empty = {"flops": {}, "bandwidth": None}
    for entry in load_cache()["devices"].values():
        return entry["measured"].get(f"torch 2.5.0|threads {threads}", empty)
    return empty


def test_rule_subtracts_what_the_benchmark_itself_adds():
    # 2 CPUs, 2 threads: busy above 0.5
    assert judge(0.4, 0.6, 2, 2, 10.0)["busy"] is False  # 0.6 - 2(1 - e^-1/6) = 0.29
    assert judge(0.4, 1.2, 2, 2, 10.0)["busy"] is True  # 1.2 - 0.31 > 0.5: others started
    assert judge(0.6, 0.6, 2, 2, 10.0)["busy"] is True
    assert judge(1.4, None, 2, 1, 0.0)["busy"] is False  # 1 thread: room for 1.5
    assert judge(1.6, None, 2, 1, 0.0)["busy_limit"] == 1.5
    assert judge(None, None, 2, 2, 1.0)["busy"] is None  # no load average: unknown


def test_a_busy_peak_is_kept_as_the_best_seen_and_measured_again_later(env, capsys):
    env.load = 3.0
    c = ceilings_for("cpu", "float32")
    q = c["peak_flops"]
    assert q["value"] == 4.0e10 and q["provenance"] == "measured"
    assert "load 3.00" in q["source"] and "busy: above 0.5" in q["source"]
    assert q["measured_under"]["busy"] is True and q["measured_under"]["cached"] is True
    assert q["measured_under"]["cpus"] == 2 and q["measured_under"]["threads"] == 2
    assert c["roofs"]["fp32"]["peak_flops"] == q
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all("busy machine" in e and "a new best" in e for e in err)
    assert _cached_env()["flops"]["float32"]["value"] == 4.0e10  # stored, not thrown away
    assert _cached_env()["bandwidth"]["value"] == 1.0e10
    # a best taken busy is measured again by the next run; a higher reading replaces it ...
    env.load, env.flops = 0.1, 4.2e10
    q = ceilings_for("cpu", "float32")["peak_flops"]
    assert env.calls == 4 and q["value"] == 4.2e10 and q["measured_under"]["busy"] is False
    assert "load 0.10" in q["source"] and "quiet" in q["source"]
    assert q["measured_under"]["tries"] == 2 and "the best of 2 measurements" in q["source"]
    # ... and a quiet best is reused, even when the machine is busy again
    env.load, env.flops = 5.0, 1.0e9
    assert ceilings_for("cpu", "float32")["peak_flops"]["value"] == 4.2e10
    assert env.calls == 4


def test_the_best_per_thread_count_is_kept_across_calls(env):
    measure_device("cpu", ["float32"], bandwidth=False)
    env.flops = 5.0e10
    measure_device("cpu", ["float32"], bandwidth=False, refresh=True)
    env.flops = 3.0e10  # a slower quiet reading: the best stays
    got = measure_device("cpu", ["float32"], bandwidth=False, refresh=True)
    item = got["measured"]["flops"]["float32"]
    assert item["value"] == 5.0e10 and item["tries"] == 3
    assert item["latest"]["value"] == 3.0e10
    assert _cached_env()["flops"]["float32"]["value"] == 5.0e10
    assert _cached_env()["kernels"]["float32"]["matmul"]["value"] == 5.0e10
    env.threads = 1  # another thread count: a best of its own
    env.flops, env.conv_flops = 2.0e10, 1.0e10
    assert ceilings_for("cpu", "float32")["peak_flops"]["value"] == 2.0e10
    assert _cached_env(threads=2)["flops"]["float32"]["value"] == 5.0e10


def test_a_busy_reading_updates_the_best_but_never_lowers_it(env):
    env.load, env.flops = 2.0, 1.0e10
    measure_device("cpu", ["float32"], bandwidth=False)
    assert _cached_env()["flops"]["float32"]["value"] == 3.0e10  # the conv beat a slow matmul
    env.flops = 6.0e10  # busy, but faster than anything seen: it raises the best
    measure_device("cpu", ["float32"], bandwidth=False)
    assert _cached_env()["flops"]["float32"]["value"] == 6.0e10
    env.load, env.flops = 3.5, 2.0e10  # busy and slower: kept as the latest reading only
    got = measure_device("cpu", ["float32"], bandwidth=False, refresh=True)
    assert got["measured"]["flops"]["float32"]["value"] == 6.0e10
    assert _cached_env()["flops"]["float32"]["value"] == 6.0e10
    assert _cached_env()["kernels"]["float32"]["matmul"]["latest"]["value"] == 2.0e10
    # the warning names this reading's load, not the stored best's
    assert any("load 3.50" in w and "below the best seen, kept" in w for w in got["warnings"])


def test_a_convolution_above_the_matmul_sets_the_compute_roof(env):
    from perfsuite.ceilings.probe import probe_plan

    env.conv_flops = 6.0e10
    c = ceilings_for("cpu", "float32")
    q = c["peak_flops"]
    assert q["value"] == 6.0e10 and q["measured_under"]["kernel"] == "conv"
    assert q["measured_under"]["shape"] == [8, 128, 32, 32, 128, 3]
    assert q["source"].startswith("conv2d 128->128 3x3 on 8x32x32")
    assert "; matmul 40 GFLOP/s" in q["source"]  # the other benchmark, beside it
    assert c["roofs"]["fp32"]["peak_flops"] == q
    kernels = _cached_env()["kernels"]["float32"]
    assert (kernels["matmul"]["value"], kernels["conv"]["value"]) == (4.0e10, 6.0e10)
    plan, _ = probe_plan(c)  # the machine check repeats the benchmark that set the roof
    assert plan["conv"] == {"dtype": "float32", "shape": [8, 128, 32, 32, 128, 3]}
    assert "matmul" not in plan
    env.conv_flops = 1.0e10  # float64 has no conv benchmark: the matmul alone
    assert ceilings_for("cpu", "float64")["peak_flops"]["measured_under"]["kernel"] == "matmul"
    assert env.conv_calls == 1


def test_the_cpu_spec_is_computed_from_its_flags_and_clock():
    from perfsuite.ceilings.cpuspec import clock

    avx512 = cpu_spec("X", {"avx512f", "avx2", "fma"}, (2.0e9, "given"), 2)
    assert avx512["flops"]["float32"] == 2 * 2.0e9 * 2 * 16 * 2  # cores x Hz x units x lanes x 2
    assert avx512["flops"]["float64"] == avx512["flops"]["float32"] / 2
    assert avx512["flops"]["bfloat16"] == avx512["flops"]["float32"]  # converted: no faster
    assert "2 FMA units (assumed" in avx512["source"] and "x 2 cores" in avx512["source"]
    avx2 = cpu_spec("X", {"avx2", "fma"}, (2.0e9, "given"), 1)
    assert avx2["flops"]["float32"] == 1 * 2.0e9 * 2 * 8 * 2
    amx = cpu_spec("X", {"avx512f", "amx_bf16"}, (2.0e9, "given"), 1)
    assert amx["flops"]["bfloat16"] == 2.0e9 * 1024
    unknown = cpu_spec("X", {"sse2"}, (2.0e9, "given"), 1)
    assert unknown["flops"] == {}
    assert unknown["source"].startswith("spec unknown:") and "FMA" in unknown["source"]
    assert cpu_spec("X", {"avx512f"}, None, 1)["source"] == "spec unknown: no clock read"
    assert clock("model name : Foo CPU @ 2.50GHz\ncpu MHz : 1200.0\n")[0] == 2.5e9
    assert clock("cpu MHz : 2100.000\n")[0] == 2.1e9
    assert clock("cpu MHz : 2100.000\n", "3500000\n") == (3.5e9, "cpufreq maximum")
    assert clock("nothing") is None


def test_a_spec_below_a_measured_matmul_is_no_spec_and_names_the_assumption():
    """A spec is an upper bound or nothing: a clock read below the turbo clock gives a spec a
    dense matmul beats, and then the flags' spec is dropped, naming the clock."""
    from perfsuite.ceilings.cpuspec import physical_kernels

    spec = cpu_spec("X", {"avx512f"}, (2.1e9, "cpu MHz"), 1)  # 134.4 GFLOP/s float32
    assert physical_kernels(spec, "float32", {"matmul": 1.0e11}) == (spec, {})
    dropped, refused = physical_kernels(spec, "float32", {"matmul": 1.5e11, "conv": 3e11})
    why = dropped["source"]
    assert dropped["flops"] == {} and why.startswith("spec unknown:") and refused == {}
    assert "float32 matmul rate 1.5e+11 FLOP/s" in why and "1.344e+11 FLOP/s" in why
    assert "the assumption shown wrong is the clock" in why
    maxed = cpu_spec("X", {"avx512f"}, (2.1e9, "cpufreq maximum"), 1)
    assert (
        "vector width or FMA units"
        in physical_kernels(maxed, "float32", {"matmul": 2e11})[0]["source"]
    )


def test_a_conv_reading_above_a_standing_spec_is_refused_and_never_the_roof():
    """The best-kept conv reading is physically possible: 2.49e11 FLOP/s of a 3x3 conv on a
    core whose spec is 1.344e11 and whose matmul reads 1.1e11 is refused, and the roof is the
    matmul's, naming the refusal."""
    from perfsuite.ceilings.cpuspec import physical_kernels
    from perfsuite.ceilings.resolve import _roof_item, judge_kernels

    spec = cpu_spec("X", {"avx512f"}, (2.1e9, "cpu MHz"), 1)
    table, refused = physical_kernels(spec, "float32", {"matmul": 1.1e11, "conv": 2.49e11})
    assert table is spec and list(refused) == ["conv"]
    kernels = {"float32": {"matmul": {"value": 1.1e11}, "conv": {"value": 2.49e11}}}
    assert judge_kernels(spec, kernels) is spec
    roof = _roof_item(kernels["float32"])
    assert roof["kernel"] == "matmul" and roof["value"] == 1.1e11
    assert "conv float32 reading 2.49e+11 FLOP/s refused" in roof["refused_kernels"][0]
    kernels["float32"]["conv"] = {"value": 1.2e11}  # below the spec: a possible roof
    assert _roof_item(kernels["float32"])["kernel"] == "conv"


def test_the_spec_stands_beside_the_measured_roof_and_fills_in_without_one(env, monkeypatch):
    monkeypatch.setattr(
        resolve_mod,
        "this_cpu_spec",
        lambda name, threads: cpu_spec(name, {"avx512f"}, (2.0e9, "given"), threads or 1),
    )
    c = ceilings_for("cpu", "float32", measure=False)  # nothing measured: the spec, labeled
    assert c["peak_flops"]["provenance"] == "spec" and c["peak_flops"]["value"] == 256e9
    assert "from the CPU flags" in c["peak_flops"]["source"]
    assert c["spec"]["id"] == "cpu-flags" and c["spec"]["cores"] == 2
    c = ceilings_for("cpu", "float32")
    assert c["peak_flops"]["provenance"] == "measured"
    assert c["spec"]["flops"]["float32"] == 256e9


def _write_old_cache(tmp_path, threads: int = 2, value: float = 3.54e10) -> None:
    host = __import__("socket").gethostname()
    item = {
        "value": value,
        "mode": "quick",
        "measured_at": "2026-11-20T10:00:00+00:00",
        "detail": "matmul n=1024, 2n^3/t, best of 5 (quick)",
        "torch": "2.5.0",
        "threads": threads,
    }
    data = {
        "version": 1,
        "devices": {
            f"{host}|{NAME}": {
                "host": host,
                "device_name": NAME,
                "user": {},
                "measured": {
                    f"torch 2.5.0|threads {threads}": {
                        "flops": {"float32": item},
                        "bandwidth": None,
                    }
                },
            }
        },
    }
    (tmp_path / "peaks.json").write_text(json.dumps(data))


def test_old_cache_without_load_is_read_as_unknown_then_upgraded(env, tmp_path, capsys):
    _write_old_cache(tmp_path)
    q = ceilings_for("cpu", "float32", measure=False)["peak_flops"]
    assert q["value"] == 3.54e10 and q["provenance"] == "measured"
    assert "load at measurement not recorded" in q["source"]
    assert q["measured_under"]["busy"] is None and env.calls == 0
    assert main(["peaks", "--dtype", "float32", "--quick"]) == 0  # measures what is missing
    out = capsys.readouterr().out
    assert "load at measurement" in out and "0.10" in out and "/2 CPUs, 2 thr" in out
    assert _cached_env()["flops"]["float32"]["value"] == 4.0e10  # re-measured on a quiet machine


def test_peaks_json_shows_load_per_value(env, capsys):
    env.load = 1.7
    assert main(["peaks", "--dtype", "float32", "--quick", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = next(r for r in out["rows"] if r["quantity"] == "peak float32")
    assert row["load_before"] == 1.7 and row["busy"] is True and row["cached"] is True
    assert row["cpus"] == 2 and row["threads"] == 2 and "load 1.70" in row["load"]
    assert row["kernel"] == "matmul" and row["other_kernels"] == {"conv": 3.0e10}
    assert len(out["warnings"]) == 3  # matmul, conv, copy


def test_one_thread_run_never_takes_the_two_thread_peak(env, tmp_path):
    _write_old_cache(tmp_path, threads=2)
    env.threads = 1
    c = ceilings_for("cpu", "float32", measure=False)
    assert c["peak_flops"]["value"] is None and "fp32" not in c["roofs"]
    env.flops, env.conv_flops = 2.1e10, 1.0e10
    c = ceilings_for("cpu", "float32")
    assert c["peak_flops"]["value"] == 2.1e10
    assert c["peak_flops"]["measured_under"]["threads"] == 1
    assert "threads 1" in c["peak_flops"]["source"]
    assert _cached_env(threads=2)["flops"]["float32"]["value"] == 3.54e10  # untouched


def test_record_with_load_provenance_validates(env, tmp_path, make_record):
    from perfsuite.record import load_record, write_record

    env.load = 3.0
    rec = make_record([(1, 1.0, 0.5)])
    rec["ceilings"] = ceilings_for("cpu", "float32")
    back = load_record(write_record(tmp_path / "run", rec))
    under = back["ceilings"]["roofs"]["fp32"]["peak_flops"]["measured_under"]
    assert under["load_before"] == 3.0 and under["busy"] is True


def test_load_text_names_old_and_unknown_loads():
    assert "not recorded" in load_text({"value": 1.0})
    assert "no load average" in load_text({"value": 1.0, "load_before": None})


def test_peaks_file_threads_and_load_reach_the_analysis(tmp_path, make_record):
    """A `perfsuite peaks --json` file measured with 2 threads, given to a 1-thread run."""
    from perfsuite.analyzers.roofline.roofline import roofline
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs
    from tests.helpers import cpu_record

    row = {"quantity": "peak float32", "measured": 1e12, "load_before": 0.2, "busy": False}
    path = tmp_path / "peaks.json"
    path.write_text(json.dumps({"env": "torch 2.5.0|threads 2", "rows": [row]}))
    roofs = peaks_file_roofs(path)
    assert roofs["fp32"]["peak_flops"]["measured_under"] == {
        "threads": 2,
        "load_before": 0.2,
        "busy": False,
    }
    rec = cpu_record(make_record, None, run_threads=1)
    rec["ceilings"]["roofs"]["fp32"]["peak_flops"]["source"] = "matmul"  # threads unknown
    assert not any("threads, this run used" in n for n in roofline(rec).notes)
    res = roofline(rec, peaks=roofs)
    note = next(n for n in res.notes if n.startswith("fp32 roof: measured with"))
    assert "2 threads" in note and "this run used 1" in note
    path.write_text(json.dumps({"rows": [{**row, "load_before": "high"}]}))
    with pytest.raises(PeaksFileError, match=r"peaks.json: field rows\[0\].load_before: 'high'"):
        peaks_file_roofs(path)


def test_a_run_on_a_busy_machine_is_flagged(env):
    from perfsuite.runner.engine.capture import resolve_ceilings

    env.load = 3.0
    ceil, why = resolve_ceilings("cpu", "float32", True)
    assert ceil["peak_flops"]["value"] == 4.0e10
    assert why.startswith("device ceilings fp32, memory:") and "busy machine" in why
    env.load = 0.1  # measured again: as fast and quiet now
    assert resolve_ceilings("cpu", "float32", True)[1] == ""


def test_peaks_threads_option_measures_the_one_thread_peak(env, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "set_num_threads", lambda n: setattr(env, "threads", n))
    assert main(["peaks", "--threads", "1", "--quick", "--dtype", "float32", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["env"] == "torch 2.5.0|threads 1"
    assert _cached_env(threads=1)["flops"]["float32"]["busy_limit"] == 1.5  # 2 - 1 + 0.5


def test_a_runs_autocast_dtype_is_measured_unless_the_cpu_converts_it(env):
    from perfsuite.runner.engine.capture import resolve_ceilings

    policy = {"autocast_dtype": "bfloat16", "autocast_native": False}
    ceil, _ = resolve_ceilings("cpu", "float32", True, policy)
    assert "bf16" not in ceil["roofs"] and env.calls == 2  # fp32 matmul, copy: judged in fp32
    ceil, _ = resolve_ceilings("cpu", "float32", True, {**policy, "autocast_native": True})
    assert ceil["roofs"]["bf16"]["peak_flops"]["value"] == 4.0e10 and env.calls == 3
    assert set(ceilings_for("cpu", "float32", also=("bf16",))["roofs"]) == {
        "fp32",
        "bf16",
        "memory",
    }
    assert env.calls == 3  # cached now


def test_gpu_peaks_are_cached_for_any_thread_count(env, monkeypatch):
    """A GPU's matmul is not the host's threads: a --threads 4 run takes the 16-thread
    peak, while a CPU peak stays per thread count."""
    monkeypatch.setattr(resolve_mod, "_compute_units", lambda device: None)
    env.threads = 16
    measure_device("cuda:0", ["float32"])
    assert env.calls == 2  # matmul + copy
    env.threads = 4
    c = ceilings_for("cuda:0", "float32", measure=False)
    assert c["peak_flops"]["value"] == 4.0e10 and c["peak_flops"]["provenance"] == "measured"
    measure_device("cuda:0", ["float32"])
    assert env.calls == 2  # found under the GPU key: nothing measured again
    (entry,) = load_cache()["devices"].values()
    assert list(entry["measured"]) == ["torch 2.5.0|gpu"]
    env.threads = 2  # 2 threads on the 2-CPU machine: quiet, so cached
    measure_device("cpu", ["float32"])  # the CPU keeps its thread count in the key
    assert env.calls == 4
    assert "torch 2.5.0|threads 2" in next(iter(load_cache()["devices"].values()))["measured"]


def test_a_track_record_gets_roofs_as_a_run_does(env, tmp_path):
    """perfsuite.track measures (or reads) the roofs by default, like `perfsuite run`."""
    torch = pytest.importorskip("torch")
    import perfsuite
    from perfsuite.record import load_record

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.tensor([0, 1] * 4)

    def step(xb, yb):
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    with perfsuite.track(
        "tiny", threshold=2.0, model=model, optimizer=opt, out=tmp_path / "runs", profile_steps=0
    ) as run:
        for _ in range(2):
            for xb, yb in run.epoch([(x[:4], y[:4]), (x[4:], y[4:])]):
                run.step(step, xb, yb)
            run.evaluate(top1=0.5)
    ceil = load_record(run.run_dir)["ceilings"]
    assert ceil["peak_flops"]["provenance"] == "measured"
    assert ceil["peak_flops"]["value"] == 4.0e10
    assert ceil["memory_bandwidth"]["value"] == 1.0e10
    assert ceil["roofs"]["fp32"]["peak_flops"]["measured_under"]["kernel"] == "matmul"


def test_the_machine_check_of_a_conv_roof_is_judged_against_it():
    from perfsuite.analyzers.roofline.above_roof import window_speeds
    from perfsuite.ceilings.probe import check_section

    plan = {"conv": {"dtype": "float32", "shape": [8, 128, 32, 32, 128, 3]}}
    section = check_section(plan, {"conv": 3.0e10}, {"conv": 5.0e10})
    assert section["conv"]["before"]["value"] == 3.0e10
    assert "conv2d 128->128 3x3 on 8x32x32" in section["conv"]["after"]["source"]
    roof = {"value": 6.0e10, "provenance": "measured", "measured_under": {"size": 8}}
    (speed,) = window_speeds(
        {"timeline": {"machine_check": section}}, {"fp32": {"peak_flops": roof}}
    )
    assert (speed.kind, speed.roof, speed.same_benchmark) == ("conv", "fp32", True)
    assert speed.ratio == pytest.approx(4.0e10 / 6.0e10)
    assert speed.text().startswith("67% of the fp32 roof")
