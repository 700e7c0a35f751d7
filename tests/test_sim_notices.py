"""The simulation's invariants on what the decode tells the prefill side (`reference/sim/notices.py`).

Five checks of lesson `stale-bootstrap` became invariants: a dead prefill's sockets
disconnected, the ABORTs a waiting timeout sends (and no abort repeats), an aborted
request staying Failed, a send that stops at a refused rank, a send after a failed init.
Each is shown, through one short hand-written plan, to break on the wrong fix of the
lesson's gallery that lacks it (and on a broken copy of hardened, for the abort), and to
hold there on the fixed and hardened forms, on every right fix of the lesson, and on
upstream's own 0.5.19 and 0.5.23 where the wheels are at hand.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

import pytest
from upstream_wheels import wheel

import reference.fixed
import reference.hardened
from reference.sim.invariants import checked_by
from reference.sim.plan import Plan
from reference.sim.run import run_plan
from reference.status import KVPoll

GALLERY = "reference.lessons.stale_bootstrap.wrong_fixes"
RIGHT = ("all_keys_one_section", "generation_counter", "identity_by_id", "pop_and_restore")
DROPPED_THEN_TIMED_OUT = [("drop", 0, 0), ("request", 0, 0), ("timeout", 0, 0)]
KILLED = [("kill", 0, 0), ("wait", 0, 0)]
ABORTED = [("request", 0, 0), ("abort", 0, 0), ("poll", 0, 0)]
FAILED_INIT = [*DROPPED_THEN_TIMED_OUT, ("kill", 0, 0), ("request", 0, 0)]
PLANS = {  # invariant: (the wrong fix that breaks it, prefills (tp, cp), steps, faults)
    "dead-prefill-disconnected": ("forget_without_disconnect", [(2, 1)], KILLED, ("kill",)),
    "abort-reaches-prefill": ("timeout_without_abort", [(2, 1)], DROPPED_THEN_TIMED_OUT, ("drop", "timeout")),
    "aborted-stays-failed": ("abort_without_latch", [(1, 1)], ABORTED, ("latency",)),
    "send-failure-stops-sends": ("send_to_every_rank", [(2, 1)], [("refuse_send", 0, 0)], ("refuse_send",)),
    "send-after-failed-init": (
        "send_without_infos_check",
        [(1, 1)],
        FAILED_INIT,
        ("drop", "timeout", "kill"),
    ),
}


def _plan(invariant: str) -> Plan:
    _, prefills, steps, faults = PLANS[invariant]
    return Plan(0, 1, prefills, "upstream", sorted(faults), steps)


def _broke(variant: ModuleType, invariant: str) -> str | None:
    run = run_plan(variant, _plan(invariant), checked_by("stale-bootstrap"))
    return run.violation and f"{run.violation.invariant}: {run.violation.detail}"


@pytest.mark.parametrize("invariant", sorted(PLANS))
def test_the_wrong_fix_breaks_it(invariant: str) -> None:
    broke = _broke(import_module(f"{GALLERY}.{PLANS[invariant][0]}"), invariant)
    assert broke is not None and broke.startswith(f"{invariant}:"), broke


@pytest.mark.parametrize("invariant", sorted(PLANS))
@pytest.mark.parametrize("form", ["fixed", "hardened", *RIGHT])
def test_it_holds_on_correct_forms(invariant: str, form: str) -> None:
    name = (
        f"reference.{form}"
        if form in ("fixed", "hardened")
        else f"reference.lessons.stale_bootstrap.right_fixes.{form}"
    )
    assert _broke(import_module(name), invariant) is None


class _NoBaseAbort(reference.hardened.KVReceiver):
    def abort(self) -> None:  # latches, but records nothing and writes no Failed
        self.conclude_state = KVPoll.Failed


def test_an_abort_that_only_latches_is_caught() -> None:
    broken = ModuleType("broken_no_base_abort")
    broken.__dict__.update({name: getattr(reference.hardened, name) for name in reference.hardened.__all__})
    broken.KVReceiver = _NoBaseAbort  # type: ignore[attr-defined]
    broke = _broke(broken, "aborted-stays-failed")
    assert broke is not None and "failure recorded False, status WaitingForInput" in broke, broke


def test_only_the_lessons_that_check_them_make_the_extra_calls() -> None:
    """Another lesson's run makes no second abort() nor late Success: its verdicts stay as they were."""
    run = run_plan(reference.fixed, _plan("aborted-stays-failed"), checked_by("failed-resurrect"))
    assert run.violation is None and not any("an answer already on its way" in text for _, _, text in run.log)


@pytest.mark.upstream
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_they_hold_on_upstream(version: str) -> None:
    from reference.upstream import load_sglang

    module = load_sglang(str(wheel(version))).module
    for invariant in PLANS:
        assert _broke(module, invariant) is None, invariant
