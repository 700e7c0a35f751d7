"""The simulation's `timeout-counts-from-send`: a request's waiting timeout counts from the
return of its metadata send, so a send that blocks (`slow_send`: a paused prefill's full
queues) does not eat into the wait.

It holds on the fixed and hardened forms and breaks on the semantic mutants that set
`init_time` before the sends (`reference.mutate`: fixed `5241adac8c`, hardened
`e0cda5583d`), built here through the mutation API as the mutation run builds them.
Lessons failure-records and stale-bootstrap check it; on fixed only stale-bootstrap can
tell the mutant apart (failure-records is a residual lesson, `bug` on fixed already).
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from upstream_wheels import wheel

import reference.fixed
import reference.hardened
from reference.mutate.mutants import ROOT, edit_key
from reference.mutate.operators import Source, mutate
from reference.mutate.runner import _copy
from reference.sim.invariants import checked_by
from reference.sim.plan import Plan
from reference.sim.profiles import PROFILES
from reference.sim.run import run_plan
from reference.upstream import load_sglang
from reference.variants import load_impl

INIT_TIME_BEFORE_SENDS = {"fixed": "5241adac8c", "hardened": "e0cda5583d"}
ONLY = frozenset({"timeout-counts-from-send"})


def _mutant(variant: str, key: str, workdir: Path) -> types.ModuleType:
    """The variant package with the one mutant `key` of its receiver.py applied."""
    code = (ROOT / "reference" / variant / "receiver.py").read_text()
    spans = Source(code).function_lines()
    edit = next(e for e in mutate(code) if edit_key(variant, "receiver.py", code, e, spans) == key)
    path = _copy(variant, workdir, f"mutant_{key}", ("receiver.py", edit.source))
    return load_impl(str(path)).module


def _plan(prefills: list[tuple[int, int]], sockets: str, steps: list[tuple[str, int, int]]) -> Plan:
    return Plan(0, 1, prefills, sockets, ["slow_send"], steps)


TOPOLOGIES = [([(1, 1)], "upstream"), ([(2, 2)], "fail-fast")]


@pytest.mark.parametrize("variant", [reference.fixed, reference.hardened], ids=["fixed", "hardened"])
@pytest.mark.parametrize(("prefills", "sockets"), TOPOLOGIES)
def test_a_blocking_send_does_not_shorten_the_wait_on_the_correct_forms(variant, prefills, sockets) -> None:
    steps = [("slow_send", 0, 0), ("wait", 0, 0), ("timeout", 0, 0), ("slow_send", 1, 0)]
    assert run_plan(variant, _plan(prefills, sockets, steps), ONLY).violation is None


@pytest.mark.parametrize("variant", sorted(INIT_TIME_BEFORE_SENDS))
@pytest.mark.parametrize(("prefills", "sockets"), TOPOLOGIES)
def test_init_time_set_before_the_sends_fails_inside_the_wait(variant, prefills, sockets, tmp_path) -> None:
    mutant = _mutant(variant, INIT_TIME_BEFORE_SENDS[variant], tmp_path)
    broke = run_plan(mutant, _plan(prefills, sockets, [("slow_send", 0, 0)]), ONLY).violation
    assert broke is not None and broke.invariant == "timeout-counts-from-send"
    assert "299.5 s after its send_metadata returned" in broke.detail


@pytest.mark.upstream
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_upstream_counts_the_wait_from_the_send(version) -> None:
    """Upstream sets `init_time` once its sends returned: a blocking send leaves its wait whole."""
    upstream = load_sglang(str(wheel(version))).module
    steps = [("slow_send", 0, 0), ("wait", 0, 0), ("timeout", 0, 0), ("slow_send", 1, 0)]
    assert run_plan(upstream, _plan([(2, 2)], "upstream", steps), ONLY).violation is None


@pytest.mark.parametrize("lesson", ["failure-records", "stale-bootstrap"])
def test_the_lessons_check_it_and_draw_the_fault(lesson) -> None:
    assert "timeout-counts-from-send" in checked_by(lesson)
    assert "slow_send" in PROFILES[lesson].faults


STALE_BOOTSTRAP = checked_by("stale-bootstrap")


@pytest.mark.parametrize(("prefills", "sockets"), TOPOLOGIES)
def test_stale_bootstrap_tells_the_fixed_form_from_its_init_time_mutant(prefills, sockets, tmp_path) -> None:
    """On fixed, failure-records is already `bug` (a residual lesson): stale-bootstrap, where
    fixed is `ok`, is the lesson whose invariants must hold on fixed and break on the mutant."""
    plan = _plan(prefills, sockets, [("slow_send", 0, 0), ("wait", 0, 0), ("slow_send", 1, 0)])
    assert run_plan(reference.fixed, plan, STALE_BOOTSTRAP).violation is None
    mutant = _mutant("fixed", INIT_TIME_BEFORE_SENDS["fixed"], tmp_path)
    broke = run_plan(mutant, plan, STALE_BOOTSTRAP).violation
    assert broke is not None and broke.invariant == "timeout-counts-from-send"


def test_a_send_that_raised_is_not_a_waiting_timeout() -> None:
    """On fixed, a send to a restarted prefill's old ports raises (fail-fast sockets) and the
    request fails at once, on the send: the waiting timeout's invariant does not apply to it.
    (Hardened takes the restart otherwise: its test above and the simulation cover it.)"""
    plan = Plan(0, 1, [(1, 1)], "fail-fast", ["restart_new"], [("restart_new", 0, 0), ("wait", 0, 0),
                                                                ("request", 0, 0)])  # fmt: skip
    run = run_plan(reference.fixed, plan, STALE_BOOTSTRAP)
    assert run.violation is None
    assert any("the send raised" in event for _, _, event in run.log), run.log


@pytest.mark.upstream
def test_an_aborted_request_is_not_a_waiting_timeout() -> None:
    """Before #36029 (0.5.11) `abort()` latches the receiver Failed and leaves the manager's
    status WaitingForInput: the request fails on its abort, at once, not on its wait."""
    upstream = load_sglang(str(wheel("0.5.11"))).module
    plan = Plan(0, 1, [(1, 1)], "upstream", ["latency"], [("request", 0, 0), ("abort", 2, 7)])  # in flight
    # (0.5.11's abort writes no Failed, and its send connects outside its try: the invariants of
    # #24522 (0.5.12) and of a refused connect, and the drain's probes for them, left out)
    left_out = {"aborted-stays-failed", "send-failure-stops-sends", "send-after-failed-init"}
    run = run_plan(upstream, plan, STALE_BOOTSTRAP - left_out)
    assert run.violation is None
    events = [event for _, _, event in run.log]
    assert "abort room 101" in events and "poll room 101: Failed" in events, events
