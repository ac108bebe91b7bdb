"""The MLPerf-style log emitter: exact line format, flushing, abort on exception, and that
MLPerf's own parser and compliance checker (test-only dependency) accept what we write."""

from __future__ import annotations

import json

import pytest

from perfsuite.mllog import MARKER, MLLogWriter, format_line


class FakeClock:
    """Seconds since the epoch advancing by `step` on every read."""

    def __init__(self, start: float = 1_700_000_000.0, step: float = 0.25) -> None:
        self.t = start
        self.step = step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def _lines(path):
    return [json.loads(x[len(MARKER) :]) for x in path.read_text().splitlines()]


def write_run(path, accuracies=(0.5, 0.8, 0.95), success=True, clock=None, benchmark="resnet"):
    clock = clock or FakeClock()
    with MLLogWriter(path, benchmark=benchmark, clock=clock) as log:
        log.start(
            {
                "global_batch_size": 256,
                "seed": 7,
                "opt_name": "sgd",
                "opt_base_learning_rate": 0.1,
                "train_samples": 1000,
                "eval_samples": 100,
                "not_an_mlperf_key": 1,
            }
        )
        for e, acc in enumerate(accuracies):
            log.epoch_start(e)
            log.epoch_stop(e)
            log.eval_start(e + 1)
            log.eval(e + 1, acc, samples=1000 * (e + 1))
            log.eval_stop(e + 1)
        log.stop(success)
    return path


def test_format_line_field_order_and_nan():
    line = format_line("eval_accuracy", float("nan"), 12, metadata={"epoch_num": 1})
    assert line == (
        ':::MLLOG {"namespace": "", "time_ms": 12, "event_type": "POINT_IN_TIME", '
        '"key": "eval_accuracy", "value": null, "metadata": {"epoch_num": 1}}'
    )


def test_start_logs_config_and_phases(tmp_path):
    path = write_run(tmp_path / "r.log")
    events = _lines(path)
    keys = [e["key"] for e in events]
    assert keys[:14] == [
        "init_start",
        "submission_benchmark",
        "submission_org",
        "submission_division",
        "submission_status",
        "submission_platform",
        "cache_clear",
        "global_batch_size",
        "seed",
        "train_samples",
        "eval_samples",
        "opt_base_learning_rate",
        "opt_name",
        "init_stop",
    ]
    assert "not_an_mlperf_key" not in keys
    assert keys[14] == "run_start" and keys[-1] == "run_stop"
    assert events[-1]["metadata"]["status"] == "success"
    assert events[-1]["event_type"] == "INTERVAL_END"
    # caller's file and line, not this module's
    assert events[0]["metadata"]["file"] == "test_mllog.py"
    evals = [e for e in events if e["key"] == "eval_accuracy"]
    assert [e["value"] for e in evals] == [0.5, 0.8, 0.95]
    assert evals[1]["metadata"]["epoch_num"] == 2
    assert evals[1]["metadata"]["samples_count"] == 2000
    # 0.25 s per clock read -> time_ms strictly increasing by 250
    times = [e["time_ms"] for e in events]
    assert times[1] - times[0] == 250


def test_each_line_is_flushed_before_close(tmp_path):
    path = tmp_path / "r.log"
    log = MLLogWriter(path, benchmark="cifar10", clock=FakeClock())
    log.start({"seed": 1})
    log.eval(1, 0.5)
    # read while the writer is still open: a killed process would leave exactly this
    keys = [e["key"] for e in _lines(path)]
    assert keys[-2:] == ["run_start", "eval_accuracy"]
    log.close()


def test_exception_inside_with_logs_aborted(tmp_path):
    path = tmp_path / "r.log"
    with pytest.raises(RuntimeError), MLLogWriter(path, "cifar10", clock=FakeClock()) as log:
        log.start({})
        raise RuntimeError("boom")
    last = _lines(path)[-1]
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "aborted"


def test_stop_is_idempotent_and_closes(tmp_path):
    log = MLLogWriter(tmp_path / "r.log", "cifar10", clock=FakeClock())
    log.start({})
    log.stop(True)
    log.stop(False)
    assert [e["key"] for e in _lines(tmp_path / "r.log")].count("run_stop") == 1
    with pytest.raises(ValueError, match="already closed"):
        log.eval(1, 0.1)


@pytest.mark.parametrize("ruleset", ["1.0.0", "4.0.0"])
def test_mlperf_compliance_checker_accepts_our_log(tmp_path, ruleset, monkeypatch):
    mlp = pytest.importorskip("mlperf_logging.compliance_checker.mlp_compliance")
    monkeypatch.chdir(tmp_path)  # the checker may write a log file in the working folder
    path = write_run(tmp_path / "result_0.txt")
    checker = mlp.make_checker("training", ruleset, True, False)
    assert checker.check_file(str(path), f"training_{ruleset}/common.yaml") is True


def test_mlperf_parser_reads_our_lines(tmp_path):
    parser = pytest.importorskip("mlperf_logging.compliance_checker.mlp_parser")
    path = write_run(tmp_path / "r.log")
    loglines, errors = parser.parse_file(str(path), ruleset="4.0.0")
    assert errors == []
    assert [ll.key for ll in loglines][-1] == "run_stop"
    assert len(loglines) == len(path.read_text().splitlines())
