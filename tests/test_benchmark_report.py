"""The benchmark report logic, on synthetic numbers: pairing, ratios, targets, validation.

No timing happens here (timed checks belong in `python -m benchmarks`, never in unit
tests): these tests feed made-up pytest-benchmark output and results to the functions
that turn them into ratios, target verdicts and the smoke run's well-formedness check.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the benchmark tools are the `bench` extra")
pytest.importorskip("pytest_benchmark", reason="the benchmark tools are the `bench` extra")

from benchmarks import overhead, plots, recovery_metrics, stream, targets, validate
from benchmarks.cli import main
from benchmarks.modes import SMOKE


def _bench(case: str, variant: str, median_s: float, ops: int, **extra) -> dict:
    stats = {"median": median_s, "min": median_s * 0.9, "iqr": median_s * 0.1, "rounds": 5}
    return {"stats": stats, "extra_info": {"case": case, "variant": variant, "ops_per_round": ops, **extra}}


def test_pairs_divide_by_batch_and_take_fixed_over_buggy() -> None:
    raw = {"benchmarks": [_bench("c", "buggy", 200e-6, 1000), _bench("c", "fixed", 300e-6, 1000)]}
    (p,) = overhead.pairs_from_raw(raw)
    assert p["buggy"]["ns_per_op"] == pytest.approx(200)
    assert p["fixed"]["ns_per_op"] == pytest.approx(300)
    assert p["ratio"] == pytest.approx(1.5)
    assert p["added_ns"] == pytest.approx(100)


def test_lock_hold_becomes_its_own_pair_and_threads_give_ops_per_second() -> None:
    raw = {
        "benchmarks": [
            _bench("f", "buggy", 1e-3, 1, lock_hold_ns_median=100.0),
            _bench("f", "fixed", 1e-3, 1, lock_hold_ns_median=400.0),
            _bench("t", "buggy", 1e-3, 1000, threads=2),
            _bench("t", "fixed", 2e-3, 1000, threads=2),
        ]
    }
    pairs = {p["case"]: p for p in overhead.pairs_from_raw(raw)}
    assert pairs["f (connection_lock held)"]["ratio"] == pytest.approx(4.0)
    assert pairs["t"]["buggy"]["ops_per_s"] == pytest.approx(1e6)
    assert pairs["t"]["fixed"]["ops_per_s"] == pytest.approx(5e5)


def test_a_case_without_its_twin_is_an_error() -> None:
    with pytest.raises(ValueError, match="lacks a variant"):
        overhead.pairs_from_raw({"benchmarks": [_bench("c", "buggy", 1e-6, 1)]})


def _detection(max_s: float) -> dict:
    config = {"variant": "fixed", "interval_s": 0.1, "max_failures": 2, "bound_s": 0.3, "max_s": max_s}
    return {"configs": [{**config, "within_bound": max_s <= 0.3}]}


def test_detection_target_met_within_bound_and_missed_beyond() -> None:
    assert targets.detection(_detection(0.25))["met"] is True
    missed = targets.detection(_detection(0.31))
    assert missed["met"] is False
    assert "0.31 s > 0.300 s" in missed["measured"]


def _run(recovered: bool, after_registered: float | str, per_key: int) -> dict:
    return {
        "repetition": 0,
        "recovered": recovered,
        "first_success_after_registered_s": after_registered,
        "first_success_after_restart_s": after_registered,
        "max_failed_per_key": per_key,
    }


def _recovery(fixed_run: dict, buggy_run: dict) -> dict:
    summary = {"first_success_after_registered_s": "x", "max_failed_per_key": 1}
    buggy_summary = {"first_success_after_restart_s": "never"}
    variants = {
        "fixed": {"runs": [fixed_run], "summary": summary},
        "buggy": {"runs": [buggy_run], "summary": buggy_summary},
    }
    return {
        "sweeps": [
            {"sockets": "upstream (IMMEDIATE=0, SNDTIMEO 1 s)", "send_timeout_s": 1.0, "variants": variants}
        ]
    }


def test_recovery_target_needs_fixed_fast_and_buggy_never() -> None:
    never = _run(False, "never", 9)
    assert targets.recovery(_recovery(_run(True, 0.01, 1), never))["met"] is True
    assert targets.recovery(_recovery(_run(True, 0.08, 1), never))["met"] is False
    assert targets.recovery(_recovery(_run(True, 0.01, 2), never))["met"] is False
    assert targets.recovery(_recovery(_run(True, 0.01, 1), _run(True, 0.01, 1)))["met"] is False


def test_unmeasured_targets_say_why_instead_of_passing() -> None:
    checked = targets.check_all({}, None, None)
    assert [t["met"] for t in checked] == [None] * 5
    assert all(t["measured"].startswith("not measured: ") for t in checked)


def _hardened_sweep(stale: int, after: float | str) -> dict:
    run = {"repetition": 0, "stale_failures": stale, "first_success_after_registered_s": after}
    summary = {"max_failed_per_key": stale, "first_success_after_registered_s": after}
    variants = {"hardened": {"runs": [run], "summary": summary}}
    return {"sweeps": [{"sockets": "fail-fast (IMMEDIATE=1, SNDTIMEO 0.1 s)", "variants": variants}]}


def test_hardened_recovery_needs_no_stale_failure_and_10_ms() -> None:
    assert targets.hardened_recovery(_hardened_sweep(0, 0.004))["met"] is True
    assert targets.hardened_recovery(_hardened_sweep(1, 0.004))["met"] is False
    assert targets.hardened_recovery(_hardened_sweep(0, 0.011))["met"] is False
    assert targets.hardened_recovery(_hardened_sweep(0, "never"))["met"] is False


def test_hardened_cache_hit_is_compared_with_buggy_times_1_1() -> None:
    share = {"hardened_cache_hit_ratio": 1.05, "hardened_cache_hit_ns": 105.0, "buggy_cache_hit_ns": 100.0}
    assert targets.hardened_cache_hit({"setup_share": share})["met"] is True
    assert (
        targets.hardened_cache_hit({"setup_share": {**share, "hardened_cache_hit_ratio": 1.2}})["met"]
        is False
    )


def test_cache_hit_share_is_compared_with_one_percent() -> None:
    share = {"fixed_cache_hit_share": 0.002, "fixed_cache_hit_ns": 200.0, "setup_ns": 1e5}
    assert targets.cache_hit_share({"setup_share": share})["met"] is True
    assert targets.cache_hit_share({"setup_share": {**share, "fixed_cache_hit_share": 0.02}})["met"] is False


def _write_valid(out: Path) -> None:
    pairs = []
    for case in validate.expected_cases(SMOKE):
        side = {"ns_per_op": 100.0, "rounds": 3}
        pairs.append(
            {"case": case, "unit": "ns/op", "buggy": side, "fixed": side, "ratio": 1.0, "added_ns": 0}
        )
    data = {"mode": "smoke", "pairs": pairs, "setup_share": {"fixed_cache_hit_share": 0.001}}
    (out / "overhead.json").write_text(json.dumps(data))
    plots.overhead_ratios(data, out / "overhead.png")
    summary = {"targets": targets.check_all({}, None, None), "machine": {"load": {}}}
    (out / "summary.json").write_text(json.dumps(summary))


def test_validation_accepts_a_well_formed_run(tmp_path: Path) -> None:
    _write_valid(tmp_path)
    assert validate.check_dir(tmp_path, SMOKE, ("overhead",)) == []


def test_validation_names_what_is_malformed(tmp_path: Path) -> None:
    _write_valid(tmp_path)
    data = json.loads((tmp_path / "overhead.json").read_text())
    data["pairs"][0]["ratio"] = None
    data["pairs"] = [p for p in data["pairs"] if p["case"] != "task registration/spawn+finish"]
    (tmp_path / "overhead.json").write_text(json.dumps(data))
    (tmp_path / "overhead.png").write_text("not a png")
    problems = validate.check_dir(tmp_path, SMOKE, ("overhead", "detection"))
    assert "overhead: case 'task registration/spawn+finish' missing" in problems
    assert any("ratio None" in p for p in problems)
    assert "overhead.png missing or not a PNG" in problems
    assert "detection.json missing" in problems


def test_bad_flag_is_a_one_line_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--only", "nonsense"])
    assert exit_info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


OLD, NEW = (1001, 1002), (2001, 2002)


def _req(receiver: int, sent: float, done: float, outcome: str, ports=OLD) -> recovery_metrics.Request:
    return recovery_metrics.Request(receiver, f"decode{receiver}:k", sent, done, outcome, ports)


def test_recovery_run_counts_from_the_restart_and_the_registration() -> None:
    requests = [
        _req(0, -0.5, -0.49, "success"),
        _req(0, 0.1, 0.2, "failed"),  # stale ports from the cache
        _req(0, 0.3, 0.31, "failed", ports=()),  # prefill down: the route fetch failed
        _req(1, 0.6, 0.7, "failed"),  # stale ports, sent after the registration
        _req(0, 0.8, 0.83, "success", ports=NEW),
        _req(1, 0.9, 0.91, "success", ports=NEW),
    ]
    run = recovery_metrics.summarise_run(0, requests, registered_s=0.5, old_ports=list(OLD))
    assert run["recovered"] is True
    assert run["first_success_after_restart_s"] == pytest.approx(0.83)
    assert run["first_success_after_registered_s"] == pytest.approx(0.33)
    assert run["failed_after_restart"] == 3
    assert run["failed_while_down"] == 1
    assert run["stale_failures_per_key"] == {"decode0:k": 1, "decode1:k": 1}
    assert run["max_failed_per_key"] == 1
    assert run["failed_per_key_after_registered"] == {"decode1:k": 1}
    assert run["sent_before_restart"] == 1


def test_a_run_that_never_recovers_says_never_not_a_number() -> None:
    run = recovery_metrics.summarise_run(0, [_req(0, 0.1, 1.1, "failed")], registered_s=0.5)
    assert run["recovered"] is False
    assert run["first_success_after_restart_s"] == "never"
    summary = recovery_metrics.summarise_variant([run, run])
    assert summary["first_success_after_restart_s"] == "never"
    assert summary["runs_recovered"] == "0 of 2"
    assert summary["registered_after_s"] == {"median": 0.5, "min": 0.5, "max": 0.5, "n": 2}


class _FlakySystem:
    """Fails every request between the restart and its re-registration, then succeeds."""

    def __init__(self) -> None:
        self.down = False
        self.registered_at: float | None = None

    def request(self, slot: int) -> stream.Outcome:
        if self.down and self.registered_at is not None:
            self.down = False
        return stream.Outcome(not self.down, f"key-{slot % 2}", (1001,))

    def restart(self):
        self.down = True
        self.registered_at = time.perf_counter()
        return lambda: self.registered_at


def test_stream_records_requests_on_both_sides_of_the_restart() -> None:
    config = stream.StreamConfig(receivers=2, rate=40.0, before=0.1, horizon=0.2)
    requests, registered = stream.run_stream(_FlakySystem(), config)
    assert registered is not None and registered >= 0
    assert any(r.sent_s < 0 for r in requests) and any(r.sent_s >= 0 for r in requests)
    assert {r.receiver for r in requests} == {0, 1}
    assert all(r.done_s >= r.sent_s for r in requests)
