"""The simulation's heartbeat invariants (`reference/sim/health.py`), over generated workloads.

`dead-only-after-misses-in-a-row`: a `/health` probe refused, answered 503, connected after
2 s or answered after 3 s is a miss; only `heartbeat_max_failures` of them in a row (a 200
resets the count) declare a prefill dead, and they do at once (fault `unhealthy` scripts the
answers). `threads-alive`: the heartbeat's thread is a daemon. Each is shown `bug` on a
wrong heartbeat that breaks it, found by the search and replayed from its saved file, and
`ok` on the fixed form on hand-written plans; the fixed and hardened forms and every right
fix hold the lesson's whole simulation in tests/test_sim.py and tests/test_right_fixes.py.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

import reference.fixed
from reference.sim.health import MISSES
from reference.sim.invariants import checked_by
from reference.sim.plan import Plan
from reference.sim.profiles import PROFILES
from reference.sim.replay import replay_file
from reference.sim.report import save
from reference.sim.run import run_plan
from reference.sim.search import search
from reference.transport.mock import Answer

pytestmark = pytest.mark.lesson(id="live-set-race")

IN_A_ROW = "dead-only-after-misses-in-a-row"
GALLERY = "reference.lessons.live_set_race.wrong_fixes"
LIVE_SET_RACE = checked_by("live-set-race")


class AnsweredIsAlive(reference.fixed.KVManager):
    """Counts only a refused connection as a miss (`alive` answers): a prefill that answers
    at all, 503 or later than the probe's timeouts, is alive. What upstream's heartbeat does
    with its non-200 count deleted; with `alive` one kind of miss, with its timeout raised."""

    alive: tuple[Answer, ...] = MISSES

    def _probe(self, addr: str) -> None:
        answer = self.transport.health_answer(addr)
        if answer is not None and (not answer.missed or answer in self.alive):
            self.heartbeat_failures[addr] = 0
            self._on_heartbeat_success(addr)
            return
        self.heartbeat_failures[addr] = self.heartbeat_failures.get(addr, 0) + 1
        if self.heartbeat_failures[addr] >= self.config.heartbeat_max_failures:
            self._handle_node_failure(addr)


def answered_is_alive(alive: tuple[Answer, ...] = MISSES) -> types.ModuleType:
    made = types.ModuleType(f"answered_is_alive_{len(alive)}_{alive[0].status}_{alive[0].connect}")
    made.__dict__.update(vars(reference.fixed))
    made.KVManager = type("KVManager", (AnsweredIsAlive,), {"alive": alive})  # type: ignore[attr-defined]
    sys.modules[made.__name__] = made
    return made


def wrong(name: str) -> types.ModuleType:
    if name == "answered_is_alive":
        return answered_is_alive()
    return importlib.import_module(f"{GALLERY}.{name}")


def plan(steps: list[tuple[str, int, int]]) -> Plan:
    return Plan(0, 1, [(1, 1)], "upstream", ["unhealthy"], steps)


@pytest.mark.parametrize("name", ["fail_on_first_miss", "count_never_reset", "answered_is_alive"])
def test_a_wrong_heartbeat_is_found_and_replays(name: str, tmp_path: Path) -> None:
    variant = wrong(name)
    outcome = search(variant, PROFILES["live-set-race"], "upstream", 0, 5.0, frozenset({IN_A_ROW}))
    assert outcome.verdict == "bug" and outcome.failing is not None, outcome
    violation = outcome.failing.violation
    assert violation is not None and violation.invariant == IN_A_ROW, violation
    path = save(outcome.failing, "live-set-race", variant, str(tmp_path))
    assert replay_file(str(path), variant) == 1
    assert replay_file(str(path), reference.fixed) == 0


@pytest.mark.parametrize("kind", [0, 1, 2], ids=["503", "late-connect", "late-answer"])
def test_each_kind_of_miss_counts(kind: int) -> None:
    # a request, then four probes: a miss of the kind before, a 200, a miss of this kind, of the next
    two_in_a_row = [("request", 0, 0), ("unhealthy", (kind - 1) % 3, 0), ("wait", 0, 0)]
    assert run_plan(reference.fixed, plan(two_in_a_row), LIVE_SET_RACE).violation is None
    broke = run_plan(answered_is_alive((MISSES[kind],)), plan(two_in_a_row), LIVE_SET_RACE).violation
    assert broke is not None and broke.invariant == IN_A_ROW
    assert "did not declare it dead" in broke.detail


def test_a_200_resets_the_count() -> None:
    split = [("request", 0, 0), ("unhealthy", 0, 0), ("wait", 0, 0)]  # miss, 200, miss, miss
    assert run_plan(reference.fixed, plan(split), LIVE_SET_RACE).violation is None
    broke = run_plan(wrong("count_never_reset"), plan(split), LIVE_SET_RACE).violation
    assert broke is not None and broke.invariant == IN_A_ROW
    assert "after 1 missed /health probe(s) in a row" in broke.detail


def test_a_heartbeat_that_is_not_a_daemon_is_seen() -> None:
    broke = run_plan(wrong("heartbeat_not_daemon"), plan([]), LIVE_SET_RACE).violation
    assert broke is not None and broke.invariant == "threads-alive"
    assert "not daemons" in broke.detail
    assert run_plan(reference.fixed, plan([]), LIVE_SET_RACE).violation is None
