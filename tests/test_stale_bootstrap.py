"""Lesson `stale-bootstrap` on the mock transport, the "slow, not dead" check, and the
verdict rules themselves (they must be able to say `bug` and `unknown`)."""

import json

import pytest

import reference.buggy
import reference.fixed
from reference.cli import main
from reference.lessons import LESSONS, Options, run_lesson
from reference.lessons.stale_bootstrap import slow_prefill
from reference.lessons.stale_bootstrap.scenario import AFTER, BEFORE, _verdict
from reference.lessons.stale_bootstrap.world import Outcome
from reference.status import KVPoll
from reference.variants import shipped

pytestmark = pytest.mark.lesson(id="stale-bootstrap")
OLD, NEW = [41000, 41001], [41003, 41004]  # mock ports: prefill ranks, decode inbox, new ranks


@pytest.mark.parametrize(
    ("sockets", "first_failure"),
    [
        ("upstream", "Request timed out after 300.0 s in KVPoll.WaitingForInput"),  # queued silently
        ("fail-fast", "send_metadata to prefill 10.0.0.1:41000 failed"),
    ],
)
def test_buggy_never_succeeds_again_after_the_restart(sockets, first_failure):
    result = run_lesson(LESSONS["stale-bootstrap"], shipped("buggy"), Options(sockets=sockets))
    assert result.verdict == "bug"
    assert result.symptom.startswith(f"0 of {AFTER} requests succeeded after the prefill restart")
    assert "stale port(s) 41000, 41001" in result.symptom and "fetched /route 0 times" in result.symptom
    d = result.details
    assert (d["old_ports"], d["new_ports"], d["stale_ports"]) == (OLD, NEW, OLD)
    assert d["successes_after"] == 0 and d["route_fetches_after"] == 0
    assert d["first_failure"].startswith(first_failure) and d["sockets"] == sockets
    assert d["heartbeat_misses"] == 0 and d["heartbeat_rounds"] >= BEFORE + AFTER, (
        "the heartbeat never noticed"
    )
    assert result.to_json()["sockets"] == sockets


@pytest.mark.parametrize(
    ("sockets", "path"),
    [
        (
            "upstream",
            "was queued silently and failed on the waiting timeout (upstream's 300 s, on virtual time)",
        ),
        ("fail-fast", "failed its send (fail-fast sockets)"),
    ],
)
def test_fixed_fails_once_then_recovers_on_the_new_ports(sockets, path):
    result = run_lesson(LESSONS["stale-bootstrap"], shipped("fixed"), Options(sockets=sockets))
    assert result.verdict == "ok", result.symptom
    d = result.details
    assert d["failures_after"] == 1 and d["successes_after"] == AFTER - 1
    assert d["stale_ports"] == OLD and d["route_fetches_after"] == len(NEW)
    assert d["bytes_verified"] == BEFORE + AFTER - 1
    assert "succeeded on new ports 41003, 41004" in result.symptom
    assert f"1 request sent to stale port(s) 41000, 41001 {path}" in result.symptom


@pytest.mark.parametrize("seed", [1, 5])
def test_verdict_does_not_depend_on_the_seed(seed):
    for name, want in (("buggy", "bug"), ("fixed", "ok")):
        assert run_lesson(LESSONS["stale-bootstrap"], shipped(name), Options(seed=seed)).verdict == want


def test_cli_json_for_the_lesson(capsys):
    assert main(["--json", "--quick", "--lesson", "stale-bootstrap"]) == 0
    got = {r["variant"]: r["verdict"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert got == {"buggy": "bug", "fixed": "ok", "hardened": "ok"}


# -- slow, not dead --
def test_slow_prefill_costs_the_fixed_receiver_one_refetch_and_no_failure():
    seen = slow_prefill.observe(reference.fixed)
    assert seen.verdict == "ok"
    assert seen.details == {
        "warm_up": "Success",
        "slow_request": "Failed",
        "slow_reason": "Request timed out after 300.0 s in KVPoll.WaitingForInput",
        "late_answers_dropped": 2,
        "extra_route_fetches": 2,  # one GET per prefill rank, once
        "re_registrations": 2,
        "successes_after": 3,
    }


def test_slow_prefill_costs_the_buggy_receiver_nothing_extra():
    seen = slow_prefill.observe(reference.buggy)
    assert seen.verdict == "ok"
    assert seen.details["slow_request"] == "Failed"
    assert (seen.details["extra_route_fetches"], seen.details["re_registrations"]) == (0, 0)


# -- the verdict rules --
def outcome(room, ok=True, ports=NEW, fetches=0, bytes_ok=True):
    status = KVPoll.Success if ok else KVPoll.Failed
    return Outcome(
        room, status, tuple(ports), fetches, bytes_ok if ok else None, None if ok else "send failed"
    )


def test_two_failures_per_key_is_a_bug():
    after = [outcome(1, False, OLD), outcome(2, False, OLD), outcome(3)]
    seen = _verdict([outcome(0, ports=OLD)], after, NEW, [], {})
    assert seen.verdict == "bug" and seen.symptom.startswith("2 of 3 requests failed after the restart")


def test_a_failure_after_recovery_is_a_bug():
    after = [outcome(1), outcome(2, False)]
    assert _verdict([outcome(0)], after, NEW, [], {}).verdict == "bug"


def test_corrupt_bytes_are_a_bug():
    seen = _verdict([outcome(0)], [outcome(1, bytes_ok=False)], NEW, [], {})
    assert seen.verdict == "bug" and "KV bytes of room 1 differ" in seen.symptom


def test_a_warm_up_failure_is_unknown():
    seen = _verdict([outcome(0, False)], [outcome(1)], NEW, [], {})
    assert seen.verdict == "unknown" and "before the restart" in seen.symptom
