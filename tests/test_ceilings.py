"""Spec-table matching, the peaks cache and --set, and quick measurement (no timing asserts)."""

from __future__ import annotations

import json
import math
import os

import pytest

from perfsuite.ceilings import (
    cache_path,
    ceilings_for,
    load_cache,
    match_spec,
    normalize_dtype,
    parse_setting,
    spec_table,
)
from perfsuite.cli import main
from perfsuite.devices.specs import spec_bandwidth, spec_flops


@pytest.mark.parametrize(
    "name, entry",
    [
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA L4", "l4"),
        ("Tesla T4", "t4"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
        ("Tesla V100-PCIE-32GB", "v100-pcie"),
        ("AMD Instinct MI250X", "mi250x"),
        ("AMD Instinct MI250", "mi250"),
        ("AMD Instinct MI300X", "mi300x"),
        # parts not in the table must not borrow a neighbour's numbers
        ("NVIDIA L40S", None),
        ("NVIDIA H100 NVL", None),
        ("Tesla V100S-PCIE-32GB", None),
        ("AMD EPYC 7B13", None),
        ("", None),
        # a slice of a device is not the device: no full-GPU numbers for it
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", None),
        ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", None),
        ("AMD Instinct MI300X CPX", None),
        # some ROCm versions name both parts so: no guess without the CU count
        ("AMD Instinct MI250X/MI250", None),
    ],
)
def test_match_spec(name, entry):
    got = match_spec(name)
    assert (got["id"] if got else None) == entry


def test_shared_mi250_name_is_told_apart_by_compute_units():
    # 110 CUs per GCD on MI250X (220 per package), 104 on MI250 (208); other counts: no spec
    assert match_spec("AMD Instinct MI250X/MI250", compute_units=110)["id"] == "mi250x"
    assert match_spec("AMD Instinct MI250X/MI250", compute_units=104)["id"] == "mi250"
    assert match_spec("AMD Instinct MI250X/MI250", compute_units=220) is None


def test_a_slice_whose_name_says_nothing_is_told_by_its_compute_units():
    """An MI300X in CPX mode reports "AMD Instinct MI300X" with 38 of its 304 CUs: the whole
    device's figures would be 8x its roof. Fewer (or other) units than the entry's: no spec."""
    assert match_spec("AMD Instinct MI300X", compute_units=304)["id"] == "mi300x"
    assert match_spec("AMD Instinct MI300X", compute_units=38) is None
    assert match_spec("NVIDIA H100 80GB HBM3", compute_units=132)["id"] == "h100-sxm"
    assert match_spec("NVIDIA H100 80GB HBM3", compute_units=16) is None  # a MIG 1g slice
    assert match_spec("NVIDIA H100 PCIe", compute_units=114)["id"] == "h100-pcie"
    assert match_spec("NVIDIA A100-SXM4-40GB", compute_units=108)["id"] == "a100-40gb"
    assert match_spec("NVIDIA H100 80GB HBM3")["id"] == "h100-sxm"  # unknown count: the name
    # every GPU entry says how many units the whole device has
    from perfsuite.devices.specs import spec_table

    assert all(isinstance(e.get("compute_units"), int) for e in spec_table())


def test_mi250_values_are_per_gcd():
    """torch sees one GCD, half a package: the datasheet's package figures halved."""
    x, m = match_spec("AMD Instinct MI250X"), match_spec("AMD Instinct MI250")
    assert spec_flops(x, "float32") == 47.85e12  # 95.7e12 / 2
    assert spec_flops(x, "bfloat16") == 191.5e12  # 383e12 / 2
    assert spec_bandwidth(x) == 1.6384e12  # 3.2768e12 / 2
    assert spec_flops(m, "float64") == 45.25e12  # 90.5e12 / 2
    assert spec_flops(m, "float16") == 181.05e12  # 362.1e12 / 2
    assert spec_bandwidth(m) == 1.6384e12
    assert "(one GCD)" in x["name"] and "halved per GCD" in x["source"]


def test_device_spec_passes_the_compute_units(monkeypatch):
    from perfsuite.ceilings import resolve

    monkeypatch.setattr(resolve, "_compute_units", lambda device: 104)
    assert resolve.device_spec("cuda:0", "AMD Instinct MI250X/MI250")["id"] == "mi250"
    assert resolve.device_spec("cpu", "AMD Instinct MI250X/MI250") is None


def test_spec_values_and_sources():
    a100 = match_spec("NVIDIA A100-SXM4-80GB")
    assert spec_flops(a100, "bf16") == 312e12
    assert spec_flops(a100, "torch.float32") == 19.5e12
    assert spec_flops(a100, "tf32") == 156e12
    assert spec_bandwidth(a100) == 2039e9
    assert spec_flops(match_spec("NVIDIA H100 80GB HBM3"), "bfloat16") == 989.5e12  # dense
    assert spec_flops(match_spec("Tesla T4"), "float64") is None  # not published
    for e in spec_table():
        assert e["source"] and e["memory_bandwidth"] > 0 and e["max_sm_clock_hz"] > 0
        assert all(v is None or v > 1e12 for v in e["flops"].values())


def test_normalize_dtype():
    assert normalize_dtype("BF16") == "bfloat16"
    assert normalize_dtype("torch.float16") == "float16"
    assert normalize_dtype(None) == "float32"


def test_parse_setting():
    assert parse_setting("float32=1.2e12") == ("float32", 1.2e12)
    assert parse_setting("memory_bandwidth=4e10") == ("bandwidth", 4e10)
    for bad in ("float32", "float32=abc", "float32=-1", "float32=nan"):
        with pytest.raises(ValueError, match="--set"):
            parse_setting(bad)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def no_cpu_spec(monkeypatch):
    """A CPU whose flags give no spec: the roofs are the cache's and the user's alone."""
    from perfsuite.ceilings import resolve
    from perfsuite.ceilings.cpuspec import cpu_spec

    unknown = cpu_spec("cpu", set(), None, 1)
    monkeypatch.setattr(resolve, "this_cpu_spec", lambda name, threads: unknown)


def test_set_round_trip_and_ceilings_without_measuring(cache_dir, capsys, no_cpu_spec):
    assert ceilings_for("cpu", "float32", measure=False)["peak_flops"]["value"] is None
    assert main(["peaks", "--set", "float32=1.2e12", "--set", "bandwidth=4e10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = next(r for r in out["rows"] if r["quantity"] == "peak float32")
    assert row["user"] == 1.2e12 and row["measured"] is None
    assert cache_path() == cache_dir / "peaks.json"
    (entry,) = load_cache()["devices"].values()
    assert entry["user"]["float32"] == 1.2e12 and entry["user"]["bandwidth"] == 4e10
    c = ceilings_for("cpu", "fp32", measure=False)
    assert c["peak_flops"] == {
        "value": 1.2e12,
        "unit": "FLOP/s",
        "provenance": "spec",
        "source": c["peak_flops"]["source"],
    }
    assert "user-set" in c["peak_flops"]["source"]
    assert c["memory_bandwidth"]["value"] == 4e10
    assert c["spec"]["id"] == "user" and c["spec"]["flops"] == {"float32": 1.2e12}
    assert c["dtype"] == "float32"
    # roofs per math: the user values, labeled spec (user-set)
    assert set(c["roofs"]) == {"fp32", "memory"}
    assert c["roofs"]["fp32"]["peak_flops"]["value"] == 1.2e12
    assert c["roofs"]["fp32"]["peak_flops"]["provenance"] == "spec"
    assert "user-set" in c["roofs"]["fp32"]["peak_flops"]["source"]
    assert c["roofs"]["memory"]["bandwidth"]["value"] == 4e10


def test_bad_set_is_one_line_error(cache_dir, capsys):
    assert main(["peaks", "--set", "float32=zero"]) == 2
    err = capsys.readouterr().err
    assert "float32=zero" in err and err.count("\n") == 1


def test_set_refuses_unknown_keys(cache_dir, capsys):
    for bad in ("foo=3", "set_at=5"):
        with pytest.raises(ValueError, match=f"unknown key '{bad.split('=')[0]}'"):
            parse_setting(bad)
    assert main(["peaks", "--set", "foo=3", "--set", "set_at=5"]) == 2
    err = capsys.readouterr().err
    expected = "float64, float32, tf32, float16, bfloat16, fp8, int8, bandwidth"
    assert expected in err and err.count("\n") == 1
    assert not (cache_dir / "peaks.json").exists()  # nothing stored


def test_set_warns_on_an_implausible_magnitude(cache_dir, capsys):
    from perfsuite.ceilings.resolve import implausible_setting

    assert main(["peaks", "--set", "float32=1.2", "--json"]) == 0  # warned, still stored
    err = capsys.readouterr().err
    assert "1.2 FLOP/s is implausibly small" in err and "did you mean 1.2e12?" in err
    (entry,) = load_cache()["devices"].values()
    assert entry["user"]["float32"] == 1.2
    assert "did you mean 9e11?" in implausible_setting("bandwidth", 900.0)  # GB/s slip
    assert implausible_setting("float32", 1e6) is None  # the bound itself is accepted


def test_quick_measure_is_positive_finite_and_cached(cache_dir, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # quiet: cached
    c = ceilings_for("cpu", "float32", measure=True, quick=True)
    for key, unit in (("peak_flops", "FLOP/s"), ("memory_bandwidth", "byte/s")):
        q = c[key]
        assert q["provenance"] == "measured" and q["unit"] == unit
        assert math.isfinite(q["value"]) and q["value"] > 0
    # the best of a matmul and a convolution, the other named beside it
    kernel = c["peak_flops"]["measured_under"]["kernel"]
    assert kernel in ("matmul", "conv")
    assert ("2n^3/t" if kernel == "matmul" else "2NKHWCr^2/t") in c["peak_flops"]["source"]
    assert ("conv " if kernel == "matmul" else "matmul ") in c["peak_flops"]["source"]
    assert "2*size/t" in c["memory_bandwidth"]["source"]
    # second call reads the cache: the very same numbers come back
    again = ceilings_for("cpu", "float32", measure=True, quick=True)
    assert again["peak_flops"]["value"] == c["peak_flops"]["value"]
    assert c["roofs"]["fp32"]["peak_flops"] == c["peak_flops"]  # the same measurement
    assert c["roofs"]["memory"]["bandwidth"] == c["memory_bandwidth"]
    (entry,) = load_cache()["devices"].values()
    (env,) = entry["measured"].values()
    assert env["flops"]["float32"]["mode"] == "quick"
    # a measured value wins over a user-set one
    from perfsuite.ceilings import set_user_values

    set_user_values("cpu", {"float32": 1.0})
    assert ceilings_for("cpu", "float32", measure=False)["peak_flops"]["provenance"] == "measured"


def test_roofs_of_a_gpu_record_from_spec_and_peaks_file(tmp_path):
    from perfsuite.devices.roofs import peaks_file_roofs, record_roofs, spec_roofs

    spec = {k: v for k, v in match_spec("NVIDIA H100 80GB HBM3").items() if k != "match"}
    roofs = spec_roofs(spec)
    assert roofs["tf32"]["peak_flops"]["value"] == 494.5e12
    assert roofs["fp32"]["peak_flops"]["value"] == 67e12  # CUDA-core fp32
    assert roofs["memory"]["bandwidth"]["value"] == 3.35e12
    assert {r["peak_flops"]["provenance"] for k, r in roofs.items() if k != "memory"} == {"spec"}
    peaks = tmp_path / "peaks.json"
    peaks.write_text(
        json.dumps(
            {
                "device_name": "H100",
                "env": "torch 2.11.0|threads 16",
                "rows": [
                    {"quantity": "peak tf32", "measured": 3.7e14, "spec": 4.945e14},
                    {"quantity": "memory bandwidth", "measured": None, "spec": 3.35e12},
                ],
            }
        )
    )
    mine = peaks_file_roofs(peaks)
    assert mine["tf32"]["peak_flops"]["provenance"] == "measured"
    # the cache key's "|" is not shown; its thread count still reaches measured_under
    source = mine["tf32"]["peak_flops"]["source"]
    assert source.startswith("peaks file peaks.json (measured;")
    assert "H100, torch 2.11.0, 16 threads" in source
    assert mine["tf32"]["peak_flops"]["measured_under"] == {"threads": 16}
    assert mine["memory"]["bandwidth"]["provenance"] == "spec"  # no measurement: the spec
    peak = {"value": 5.4e13, "unit": "FLOP/s", "provenance": "measured"}
    ceil = {
        "dtype": "float32",
        "spec": spec,
        "peak_flops": peak,
        "roofs": {"fp32": {"peak_flops": peak}},
    }
    got = record_roofs(ceil, mine)
    assert got["tf32"]["peak_flops"]["value"] == 3.7e14  # the peaks file first
    assert got["fp32"]["peak_flops"]["value"] == 5.4e13  # then the record's measured roofs
    assert got["bf16"]["peak_flops"]["value"] == 989.5e12  # then the spec table


@pytest.mark.parametrize(
    "key, text",
    [
        ("torch 2.13.0+cpu|threads 2", "torch 2.13.0+cpu, 2 threads"),
        ("torch 2.11.0|threads 1", "torch 2.11.0, 1 thread"),
        ("torch none|threads n/a", "torch none, threads n/a"),
        ("torch 2.11.0|gpu", "torch 2.11.0, GPU (any thread count)"),
        ("torch 2.11.0, 16 threads", "torch 2.11.0, 16 threads"),  # not a key: as is
        ("?", "?"),
    ],
)
def test_env_key_is_shown_without_its_separator(key, text):
    from perfsuite.devices.roofs import env_key, env_text

    assert env_text(key) == text
    assert env_text(env_key("2.13.0+cpu", 2)) == "torch 2.13.0+cpu, 2 threads"
    assert env_key("2.11.0", 16, gpu=True) == env_key("2.11.0", 4, gpu=True) == "torch 2.11.0|gpu"


def test_peaks_prints_readable_env_and_still_finds_old_cache_keys(cache_dir, monkeypatch, capsys):
    import socket

    from perfsuite.ceilings import device_name
    from perfsuite.ceilings.cache import device_key

    monkeypatch.setattr("perfsuite.ceilings.resolve._env", lambda: ("2.13.0+cpu", 2))
    item = {"value": 5e10, "mode": "quick", "detail": "matmul", "torch": "2.13.0+cpu"}
    item.update(threads=2, measured_at="then", busy=False)
    key = device_key(socket.gethostname(), device_name("cpu"))
    old = {"torch 2.13.0+cpu|threads 2": {"flops": {"float32": item}, "bandwidth": None}}
    entry = {"host": socket.gethostname(), "device_name": device_name("cpu"), "user": {}}
    cache = {"version": 1, "devices": {key: {**entry, "measured": old}}}
    (cache_dir / "peaks.json").write_text(json.dumps(cache))
    assert ceilings_for("cpu", "float32", measure=False)["peak_flops"]["value"] == 5e10
    assert main(["peaks", "--set", "float64=1e10"]) == 0
    out = capsys.readouterr().out
    assert f" on {socket.gethostname()}, torch 2.13.0+cpu, 2 threads\n" in out
    assert "|threads" not in out
    (stored,) = load_cache()["devices"].values()
    assert list(stored["measured"]) == ["torch 2.13.0+cpu|threads 2"]  # the key on disk


NO_PEAKS_FLAG = (
    "no cached peaks for this device: pass measure_peaks=True / drop --no-peaks, or run "
    "`perfsuite peaks`"
)


def test_an_empty_cache_gives_absent_roofs_and_says_how_to_get_them(
    cache_dir, make_record, no_cpu_spec
):
    from perfsuite.record import validate_record
    from perfsuite.runner.engine.capture import resolve_ceilings

    c = ceilings_for("cpu", "float32", measure=False)
    why = "no cached measurement (not asked to measure) and no spec value"
    assert c["peak_flops"] == {
        "value": None,
        "unit": "FLOP/s",
        "provenance": "absent",
        "source": why,
    }  # never labeled "measured": nothing was
    assert c["memory_bandwidth"] == {
        "value": None,
        "unit": "byte/s",
        "provenance": "absent",
        "source": why,
    }
    assert c["roofs"] == {}
    ceil, flag = resolve_ceilings("cpu", "float32", False)
    assert flag == NO_PEAKS_FLAG
    validate_record({**make_record([(1, 1.0, 0.5)]), "ceilings": ceil})  # schema accepts it
    main(["peaks", "--set", "float32=1.2e12", "--set", "bandwidth=4e10"])
    assert resolve_ceilings("cpu", "float32", False)[1] == ""  # user-set roofs: nothing missing


def test_an_absent_quantity_has_no_value(make_record):
    from perfsuite.record import RecordError, quantity, validate_record

    with pytest.raises(ValueError, match=r"an absent quantity has no value, got 5\.0"):
        quantity(5.0, "FLOP/s", "absent", "why")
    rec = make_record([(1, 1.0, 0.5)])
    rec["ceilings"] = {
        "device": "cpu",
        "dtype": "float32",
        "peak_flops": {"value": 5.0, "unit": "FLOP/s", "provenance": "absent"},
    }
    with pytest.raises(
        RecordError, match=r"field ceilings\.peak_flops\.value: 5\.0 is not of type"
    ):
        validate_record(rec)


def test_a_dtype_without_a_benchmark_is_absent_even_when_measuring(cache_dir):
    from perfsuite.runner.engine.capture import resolve_ceilings

    ceil, flag = resolve_ceilings("cpu", "float16", True)  # no CPU fp16 benchmark: none run
    assert ceil["peak_flops"]["provenance"] == "absent"
    source = ceil["peak_flops"]["source"]
    assert source.startswith("no cached measurement") and source.endswith("no spec value")
    assert "for float16 on this device" in flag and "`perfsuite peaks --set`" in flag


def _fake_measure(monkeypatch, flops):
    """measure_device stand-in: the given measured FLOP/s per dtype, nothing timed."""
    import perfsuite.ceilings as ceilings

    def fake(device, dtypes, **kw):
        item = {"value": 0.0, "mode": "quick", "detail": "fake"}
        return {
            "device": device,
            "device_name": "Test CPU",
            "host": "h",
            "env": "torch x|threads 2",
            "measured": {"flops": {d: {**item, "value": v} for d, v in flops.items()}},
            "user": {},
            "warnings": [],
        }

    monkeypatch.setattr(ceilings, "measure_device", fake)


@pytest.mark.parametrize("flags, software", [({"avx2"}, True), ({"avx2", "avx512_bf16"}, False)])
def test_bf16_peak_on_a_cpu_without_bf16_is_labeled_software(
    cache_dir, monkeypatch, capsys, flags, software
):
    import perfsuite.hostinfo as hostinfo

    pytest.importorskip("tqdm")
    monkeypatch.setattr(hostinfo, "cpu_flags", lambda path="": frozenset(flags))
    _fake_measure(monkeypatch, {"float32": 78.2e9, "bfloat16": 1.18e9})
    note = "software: this CPU has no native bfloat16 instructions; not a hardware ceiling"
    assert main(["peaks", "--quick", "--dtype", "float32", "--dtype", "bfloat16", "--json"]) == 0
    rows = {r["quantity"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["peak bfloat16"]["software"] == (note if software else None)
    assert rows["peak float32"]["software"] is None  # float32 is always native
    assert main(["peaks", "--quick", "--dtype", "float32", "--dtype", "bfloat16"]) == 0
    out = capsys.readouterr().out
    assert ("peak bfloat16 (software)" in out) is software
    assert (f"peak bfloat16: {note}" in out) is software


def test_benchmark_operands_never_draw_from_the_global_rng():
    torch = pytest.importorskip("torch")
    from perfsuite.ceilings.measure import conv_benchmark, matmul_benchmark

    torch.manual_seed(123)
    before = torch.get_rng_state()
    matmul_benchmark("cpu", "float32", 64)
    conv_benchmark("cpu", "float32", (1, 3, 8, 8, 4, 3))
    assert torch.equal(torch.get_rng_state(), before)
