"""The simulation's receiver-end invariants: how a request ends, and what it leaves.

`no-record-without-failure` and `exception-latches-failed` (failure-records) and
`sent-request-ends` (restart-recovery, stale-bootstrap), each shown to hold on the shipped
forms and to break, with its own name, on a receiver that lacks what it states. The broken
receivers are `reference.hardened`'s with one step done the tempting way; the plans are
hand-written (fast, exact), with the faults `rank_failed` and `restart_before_send`.
"""

from __future__ import annotations

import sys
import types

import pytest

import reference.fixed
import reference.hardened
from reference.sim.invariants import checked_by
from reference.sim.plan import Plan
from reference.sim.run import run_plan
from reference.status import KVPoll


def _run(lesson: str, variant: types.ModuleType, steps: list[tuple[str, int, int]], faults: tuple[str, ...],
         sockets: str = "upstream") -> str | None:  # fmt: skip
    planned = Plan(0, 1, [(1, 1)], sockets, sorted(faults), steps)
    violation = run_plan(variant, planned, checked_by(lesson)).violation
    return None if violation is None else violation.invariant


def _variant(name: str, receiver: type) -> types.ModuleType:
    made = types.ModuleType(name)
    made.__dict__.update(vars(reference.hardened))
    made.KVReceiver = receiver  # type: ignore[attr-defined]
    sys.modules[name] = made
    return made


class RecordsWhileWaiting(reference.hardened.KVReceiver):
    """Records the timeout reason at every poll, before asking whether the timeout passed."""

    def _check_waiting_timeout(self) -> KVPoll:
        self._record_timeout()
        return super()._check_waiting_timeout()


class NoLatchOnException(reference.hardened.KVReceiver):
    """Takes the reason and clears, but leaves the request unconcluded."""

    def failure_exception(self):  # type: ignore[no-untyped-def]
        taken = super().failure_exception()
        self.conclude_state = None
        return taken


class DropsHeldMetadata(reference.hardened.KVReceiver):
    """Forgets the metadata it held while its prefill restarted: it never sends it."""

    def send_metadata(self, kv_indices: list[int]) -> None:
        super().send_metadata(kv_indices)
        self._deferred_indices = None


REQUEST_THEN_POLLS = [("request", 0, 0), ("poll", 0, 0), ("tick", 0, 0), ("poll", 0, 0)]
RANK_FAILED = [
    ("open", 0, 0), ("init", 0, 0), ("rank_failed", 0, 0), ("request", 0, 0), ("rank_failed", 0, 0),
]  # fmt: skip
RESTART_BEFORE_SEND = [("restart_before_send", 0, 0), ("poll", 0, 0)]


@pytest.mark.parametrize("variant", [reference.hardened, reference.fixed], ids=["hardened", "fixed"])
def test_a_request_that_succeeds_has_no_failure_record(variant: types.ModuleType) -> None:
    assert _run("failure-records", variant, REQUEST_THEN_POLLS, ("latency",)) is None
    broken = _variant("sb_records_while_waiting", RecordsWhileWaiting)
    assert _run("failure-records", broken, REQUEST_THEN_POLLS, ("latency",)) == "no-record-without-failure"


def test_a_request_failed_on_another_rank_polls_failed_after_its_exception() -> None:
    for variant in (reference.hardened, reference.fixed):
        assert _run("failure-records", variant, RANK_FAILED, ("rank_failed",)) is None
    broken = _variant("sb_no_latch_on_exception", NoLatchOnException)
    # its next poll reads a cleared room: upstream's check_status raises KeyError there
    broke = _run("failure-records", broken, RANK_FAILED, ("rank_failed",))
    assert broke in ("no-raise", "exception-latches-failed"), broke


def test_a_request_whose_send_raised_during_a_restart_is_sent_again_and_ends() -> None:
    faults = ("restart_before_send",)
    assert _run("restart-recovery", reference.hardened, RESTART_BEFORE_SEND, faults, "fail-fast") is None
    broken = _variant("sb_drops_held_metadata", DropsHeldMetadata)
    assert _run("restart-recovery", broken, RESTART_BEFORE_SEND, faults, "fail-fast") == "sent-request-ends"
    # with upstream's sockets the fault is off (hardened's restart-before-send hole, sim/README.md)
    assert _run("restart-recovery", broken, RESTART_BEFORE_SEND, faults, "upstream") is None


def test_a_sent_request_ends_on_fixed_at_its_waiting_timeout() -> None:
    steps = [("request", 0, 0), ("kill", 0, 0), ("request", 0, 0), ("drop", 0, 0), ("request", 0, 0)]
    assert _run("stale-bootstrap", reference.fixed, steps, ("kill", "drop")) is None


@pytest.mark.parametrize(("restart", "sockets"), [("restart_new", "upstream"), ("restart_same", "upstream"),
                                                  ("restart_same", "fail-fast")])  # fmt: skip
def test_hardened_has_no_answer_to_a_restart_between_init_and_send(restart: str, sockets: str) -> None:
    """The hole restart_before_send stays clear of (restart-recovery README, "Open in hardened"):
    when hardened closes it, this test fails and restart_before_send may take every socket kind."""
    steps = [("open", 0, 0), ("init", 0, 0), (restart, 0, 0), ("send", 0, 0)]
    assert _run("restart-recovery", reference.hardened, steps, (restart,), sockets) == "restart-recovered"
