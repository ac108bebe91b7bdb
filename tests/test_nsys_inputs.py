"""Bad Nsight Systems inputs: each a one-line error naming the file (exit 2, no traceback) or
a result with a note saying what is missing."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from perfsuite.analyzers.timeline import analyze_trace, read_profile
from perfsuite.cli import main
from tests.conftest import shared_path

SAXPY = "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"


@pytest.fixture
def saxpy_copy(tmp_path):
    """A writable copy of the real schema-2.9.1 export."""
    dst = tmp_path / "report.sqlite"
    shutil.copyfile(shared_path("nsys", SAXPY), dst)
    return dst


def _edit(path, *statements):
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()


def _refused(path, capsys) -> str:
    assert main(["timeline", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err
    return err


def test_an_sqlite_file_that_is_not_an_export(tmp_path, capsys):
    path = tmp_path / "other.sqlite"
    _edit(path, "CREATE TABLE t (x INTEGER)", "INSERT INTO t VALUES (1)")
    err = _refused(path, capsys)
    assert "not an Nsight Systems export" in err and "nsys export --type sqlite" in err


def test_a_newer_schema(saxpy_copy, capsys):
    _edit(
        saxpy_copy,
        "UPDATE EXPORT_META_DATA SET value = '4.0.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
    )
    err = _refused(saxpy_copy, capsys)
    assert "EXPORT_SCHEMA_VERSION: 4.0.0" in err and "2.x and 3.x" in err


def test_a_truncated_file(saxpy_copy, capsys):
    data = saxpy_copy.read_bytes()
    saxpy_copy.write_bytes(data[: len(data) // 2])
    err = _refused(saxpy_copy, capsys)
    assert f"truncated SQLite file ({len(data) // 2} bytes; its header says {len(data)})" in err


def test_a_corrupt_page_is_one_line(saxpy_copy, capsys):
    data = bytearray(saxpy_copy.read_bytes())
    data[4096 : 4096 * 8] = b"\xff" * (4096 * 7)  # the schema and first tables' pages
    saxpy_copy.write_bytes(bytes(data))
    err = _refused(saxpy_copy, capsys)
    assert "SQLite" in err


def test_a_missing_column_is_named(saxpy_copy, capsys):
    _edit(saxpy_copy, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName")
    err = _refused(saxpy_copy, capsys)
    assert "field CUPTI_ACTIVITY_KIND_KERNEL.demangledName: missing" in err


def test_no_kernel_table_reports_what_is_there(saxpy_copy, capsys):
    _edit(
        saxpy_copy, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL", "DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY"
    )
    a = analyze_trace(read_profile(saxpy_copy), top=None)
    assert not a.has_device and a.devices == []
    note = next(n for n in a.notes if "no CUPTI_ACTIVITY_KIND_KERNEL table" in n)
    assert "95 runtime" in note and "22 nvtx" in note
    assert main(["timeline", str(saxpy_copy)]) == 0
    assert "no CUPTI_ACTIVITY_KIND_KERNEL table" in capsys.readouterr().out


def test_nvtx_ranges_that_never_close_are_flagged(saxpy_copy):
    _edit(saxpy_copy, "UPDATE NVTX_EVENTS SET end = NULL WHERE start = 924881857")
    a = analyze_trace(read_profile(saxpy_copy), top=None)
    assert any(n.startswith("1 NVTX range(s) never closed") for n in a.notes)
    saxpy = next(r for r in a.nvtx_projection if r.name == "saxpy")
    assert saxpy.ranges == 4 and saxpy.gpu_ops == 4


def test_a_report_without_nsys_on_path(tmp_path, capsys, monkeypatch):
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"\x00" * 64)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys there
    err = _refused(report, capsys)
    assert "`nsys` is not on PATH" in err and "nsys export --type sqlite" in err


def test_a_report_is_exported_by_nsys(tmp_path, monkeypatch):
    """A stand-in `nsys` on PATH that writes the real export where it is asked to: the
    report reads as that export, under the report's own name."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsys"
    src = shared_path("nsys", SAXPY)
    fake.write_text(f'#!/bin/sh\nwhile [ "$1" != "--output" ]; do shift; done\ncp "{src}" "$2"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"\x00" * 64)
    data = read_profile(report)
    assert data.path == str(report) and len(data.device.ts) == 20


def test_a_value_that_is_not_an_integer(saxpy_copy, capsys):
    _edit(saxpy_copy, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 2")
    err = _refused(saxpy_copy, capsys)
    assert "field CUPTI_ACTIVITY_KIND_KERNEL: a value that is not an integer" in err


def test_sparse_row_ids_read_the_same(saxpy_copy):
    """Rows far apart in rowid are read as row tuples, not as billions of empty ranges."""
    before = read_profile(saxpy_copy)
    _edit(
        saxpy_copy,
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = 1000000000000 "
        "WHERE rowid = (SELECT MAX(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
    )
    after = read_profile(saxpy_copy)
    assert sorted(after.runtime.ts) == sorted(before.runtime.ts)
    assert len(after.runtime.ts) == 95


def test_no_table_of_names(saxpy_copy, capsys):
    _edit(saxpy_copy, "DROP TABLE StringIds")
    assert "field StringIds: missing" in _refused(saxpy_copy, capsys)
