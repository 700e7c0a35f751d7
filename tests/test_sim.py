"""The cluster simulation (reference/sim): invariants, determinism, shrinking, replay.

Each invariant is shown to break on a variant that lacks what it states and to hold on
the fixed form, through hand-written plans (fast, exact) and through the search itself
(the lesson's `simulation` check, within a small budget).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

import reference.buggy
import reference.fixed
import reference.hardened
from reference.harness.options import Options
from reference.sim.check import simulation_check
from reference.sim.invariants import Violation, checked_by
from reference.sim.plan import Plan
from reference.sim.profiles import PROFILES
from reference.sim.replay import replay_file
from reference.sim.report import save, timeline
from reference.sim.run import run_plan
from reference.sim.search import MIN_RUNS, search

RESTART_THEN_STAGGERED_TIMEOUTS = [
    ("restart_new", 0, 0), ("request", 0, 0), ("wait", 7, 0), ("request", 0, 0), ("wait", 6, 0),
    ("request", 0, 0),
]  # fmt: skip


def run_for(lesson: str, variant: types.ModuleType, planned: Plan) -> Violation | None:
    """The run, checked against the invariants the lesson's simulation checks."""
    return run_plan(variant, planned, checked_by(lesson)).violation


def plan(steps: list[tuple[str, int, int]], faults: tuple[str, ...] = (), sockets: str = "upstream") -> Plan:
    return Plan(0, 1, [(1, 1)], sockets, sorted(faults), steps)


def module(name: str, **members: object) -> types.ModuleType:
    made = types.ModuleType(name)
    made.__dict__.update(members)
    sys.modules[name] = made
    return made


class ByKey(reference.fixed.KVReceiver):
    """Invalidates every key it used, whatever the entry now is (a newer generation too)."""

    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            for key in self._connection_pool_entries:
                self.kv_mgr.connection_pool.pop(key, None)
        self._connection_pool_entries.clear()


class RemembersCleared(reference.fixed.KVManager):
    """Drops a Failed for a room it remembers clearing: the set grows by one per request."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.cleared: set[int] = set()

    def clear(self, bootstrap_room: int) -> None:
        super().clear(bootstrap_room)
        self.cleared.add(bootstrap_room)


def test_fixed_holds_where_buggy_resurrects_a_cleared_room() -> None:
    steps = [("request", 0, 0), ("poll", 0, 0), ("late_failed", 0, 0)]
    assert run_plan(reference.fixed, plan(steps, ("late_failed",))).violation is None
    broke = run_plan(reference.buggy, plan(steps, ("late_failed",))).violation
    assert broke is not None and broke.invariant == "cleared-stays-cleared"
    assert "back as Failed" in broke.detail


def test_an_invalidation_by_key_drops_a_newer_generation() -> None:
    wrong = module("sim_by_key", KVManager=reference.fixed.KVManager, KVReceiver=ByKey)
    restarts = plan(RESTART_THEN_STAGGERED_TIMEOUTS, ("restart_new",))
    assert run_for("stale-bootstrap", reference.fixed, restarts) is None
    broke = run_for("stale-bootstrap", wrong, restarts)
    assert broke is not None and broke.invariant == "invalidate-own-only"


def test_buggy_keeps_the_entry_a_request_timed_out_on() -> None:
    steps = [("restart_new", 0, 0), ("request", 0, 0), ("timeout", 0, 0)]
    broke = run_for("stale-bootstrap", reference.buggy, plan(steps, ("restart_new",)))
    assert broke is not None and broke.invariant == "failed-entry-invalidated"
    assert "waiting timeout" in broke.detail
    assert run_for("stale-bootstrap", reference.fixed, plan(steps, ("restart_new",))) is None


def test_fail_fast_send_failure_must_invalidate() -> None:
    steps = [("restart_new", 0, 0), ("request", 0, 0)]
    broke = run_for("stale-bootstrap", reference.buggy, plan(steps, ("restart_new",), "fail-fast"))
    assert broke is not None and broke.invariant == "failed-entry-invalidated"
    assert "send raised" in broke.detail


def test_whole_state_bound_finds_memory_kept_per_request_in_a_new_table() -> None:
    wrong = module("sim_remembers", KVManager=RemembersCleared, KVReceiver=reference.fixed.KVReceiver)
    broke = run_plan(wrong, plan([("request", 0, 0), ("poll", 0, 0)])).violation
    assert broke is not None and broke.invariant == "whole-state-bound"
    assert "RemembersCleared.cleared" in broke.detail


def test_whole_state_bound_finds_a_module_level_table() -> None:
    rooms: list[int] = []

    class Manager(reference.fixed.KVManager):
        def clear(self, bootstrap_room: int) -> None:
            super().clear(bootstrap_room)
            rooms.append(bootstrap_room)

    wrong = module("sim_module_table", KVManager=Manager, KVReceiver=reference.fixed.KVReceiver, ROOMS=rooms)
    Manager.__module__ = wrong.__name__
    broke = run_plan(wrong, plan([("request", 0, 0), ("poll", 0, 0)])).violation
    assert broke is not None and "sim_module_table.ROOMS" in broke.detail


def test_a_late_abort_keeps_a_failure_record_on_fixed_not_on_hardened() -> None:
    steps = [("request", 0, 0), ("poll", 0, 0), ("late_abort", 0, 0)]
    broke = run_plan(reference.fixed, plan(steps, ("late_abort",))).violation
    assert broke is not None and broke.invariant == "whole-state-bound" and "failure_records" in broke.detail
    assert run_plan(reference.hardened, plan(steps, ("late_abort",))).violation is None


def test_a_heartbeat_that_dies_inside_the_failure_handler_is_seen() -> None:
    # Two requests end (their cleanups wait for the status thread), one stays open; the
    # prefill dies and the status thread runs inside the failure handler's loop.
    steps = [("request", 0, 0), ("request", 0, 0), ("poll", 0, 0), ("open", 0, 0), ("race_cleanup", 0, 0),
             ("kill", 0, 0), ("wait", 2, 0)]  # fmt: skip
    faults = ("kill", "race_cleanup")
    broke = run_plan(reference.buggy, plan(steps, faults)).violation
    assert broke is not None and broke.invariant == "threads-alive"
    assert "Set changed size during iteration" in broke.detail
    assert run_plan(reference.fixed, plan(steps, faults)).violation is None


def test_same_plan_same_run() -> None:
    steps = [*RESTART_THEN_STAGGERED_TIMEOUTS, ("kill", 0, 0), ("tick", 0, 0), ("tick", 0, 0), ("gc", 0, 0)]
    faults = ("restart_new", "kill", "gc", "latency")
    first, second = (
        run_plan(reference.fixed, plan(steps, faults), checked_by("stale-bootstrap")) for _ in range(2)
    )
    assert first.log == second.log and len(first.log) > 20


def test_search_shrinks_to_a_short_plan_and_replays(tmp_path: Path) -> None:
    lesson = checked_by("failed-resurrect")
    outcome = search(reference.buggy, PROFILES["failed-resurrect"], "upstream", 3, 5.0, lesson)
    assert outcome.verdict == "bug" and outcome.failing is not None
    assert len(outcome.failing.plan.steps) <= 3, outcome.failing.plan.steps
    text = timeline(outcome.failing)
    assert "invariant" in text and "https://github.com/sgl-project/sglang/pull/" in text
    assert all(len(line) <= 120 for line in text.splitlines())
    path = save(outcome.failing, "failed-resurrect", reference.buggy, str(tmp_path))
    assert replay_file(str(path)) == 1
    assert replay_file(str(path), reference.fixed) == 0
    data = json.loads(path.read_text())
    assert data["invariant"] == outcome.failing.violation.invariant  # type: ignore[union-attr]


def test_replay_of_a_bad_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"plan": {"steps": [["teleport", 0, 0]]}}')
    assert replay_file(str(bad)) == 2
    assert replay_file(str(tmp_path / "missing.json")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("python -m reference --replay: error:") for line in err)


def test_a_budget_too_small_to_decide_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    # The time bound is 3 x what the 60 planned runs (the floor) cost at the variant's rate: a
    # form that claims 1,000 runs a second gets 0.18 s for them, and runs out.
    monkeypatch.setattr(reference.fixed, "SIM_RUNS_PER_SECOND", 1_000, raising=False)
    lesson = "stale-bootstrap"  # whose invariants fixed holds: no run may end the search with a bug
    outcome = search(reference.fixed, PROFILES[lesson], "upstream", 0, 0.01, checked_by(lesson))
    assert outcome.verdict == "unknown" and outcome.runs < outcome.planned == MIN_RUNS


@pytest.mark.parametrize("lesson", ["failed-resurrect", "live-set-race", "stale-bootstrap"])
def test_the_simulation_check_holds_on_fixed_and_hardened(lesson: str) -> None:
    check = simulation_check(lesson)
    for variant in (reference.fixed, reference.hardened):
        observation = check.body(variant, Options(budget=10.0))
        assert observation.verdict == "ok", (variant.__name__, observation.symptom)
        assert "generated runs held every invariant" in observation.symptom


def test_the_simulation_check_on_buggy_names_the_invariant_and_the_replay() -> None:
    observation = simulation_check("failed-resurrect").body(reference.buggy, Options(budget=3.0))
    assert observation.verdict == "bug"
    assert observation.symptom.startswith("cleared-stays-cleared:")
    assert "python -m reference --replay " in observation.symptom
    assert "broke" in observation.details["counterexample"]


def test_a_late_cleanup_that_pops_a_re_registered_prefills_set_is_seen() -> None:
    # A status thread preempted in a cleanup goes on after the prefill failed, came back and
    # a new room was tracked; the prefill's next failure must still fail that room.
    steps = [("request", 0, 0), ("poll", 0, 0), ("race_cleanup_late", 0, 0), ("kill", 0, 0), ("wait", 2, 0),
             ("kill", 0, 0), ("open", 0, 0), ("init", 0, 0), ("end_status", 0, 0), ("kill", 0, 0),
             ("wait", 2, 0)]  # fmt: skip
    late = plan(steps, ("kill", "race_cleanup_late"))
    for variant in (reference.buggy, reference.fixed):
        broke = run_for("stale-tracker", variant, late)
        assert broke is not None and broke.invariant == "node-failure-fails-rooms", variant.__name__
        assert "WaitingForInput" in broke.detail
    assert run_for("stale-tracker", reference.hardened, late) is None


def test_a_late_abort_of_a_reused_rooms_previous_request() -> None:
    steps = [("request", 0, 0), ("poll", 0, 0), ("reuse", 0, 0), ("init", 0, 0), ("late_abort", 0, 0)]
    reused = plan(steps, ("reuse", "late_abort"))
    broke = run_for("room-reuse", reference.fixed, reused)
    assert broke is not None and broke.invariant == "reused-room-unaffected"
    assert run_for("room-reuse", reference.hardened, reused) is None


@pytest.mark.parametrize("prefill", [(2, 1), (1, 2)])
def test_an_answer_counted_for_a_reused_rooms_previous_request_is_not_the_new_ones(prefill) -> None:
    # Request A ends Success; the inbox counts a late answer of A's rank 1 after A's clear(); B
    # reuses the room and sends: its rank 0's answer must not make it Success on its own.
    from reference.lessons.room_reuse.wrong_fixes import leftovers_kept

    steps = [("request", 0, 0), ("tick", 0, 0), ("poll", 0, 0), ("reuse_late_answer", 0, 1), ("tick", 0, 0)]
    reused = Plan(0, 1, [prefill], "upstream", ["latency", "reuse_late_answer"], steps)
    broke = run_for("room-reuse", leftovers_kept, reused)
    assert broke is not None and broke.invariant == "answers-per-lifecycle", broke
    assert "with 1 of the 2 answers it waits for since its metadata (ranks [0])" in broke.detail
    assert run_for("room-reuse", reference.hardened, reused) is None
    one_rank = Plan(0, 1, [(1, 1)], "upstream", ["latency", "reuse_late_answer"], steps)
    assert run_for("room-reuse", leftovers_kept, one_rank) is None  # one answer: nothing to count early


def test_a_restart_on_the_same_ports_fails_requests_on_fixed_not_on_hardened() -> None:
    steps = [("restart_same", 0, 0), ("request", 0, 0), ("poll", 0, 0)]
    same = plan(steps, ("restart_same",))
    broke = run_for("restart-recovery", reference.fixed, same)
    assert broke is not None and broke.invariant == "restart-recovered"
    assert run_for("restart-recovery", reference.hardened, same) is None


@pytest.mark.parametrize("lesson", sorted(PROFILES))
def test_each_lesson_readme_lists_its_invariants_with_sources(lesson: str) -> None:
    readme = (
        Path(__file__).parents[1] / "reference" / "lessons" / lesson.replace("-", "_") / "README.md"
    ).read_text()
    section = readme.split("## Invariants (the simulation)", 1)[1]
    for invariant in checked_by(lesson):
        assert f"`{invariant}`" in section, invariant
    assert "https://github.com/sgl-project/sglang/pull/" in section


def test_the_default_run_prints_the_shrunk_timeline_and_a_replay_that_reproduces(capsys) -> None:
    from reference.cli import main

    assert main(["--variant", "buggy", "--lesson", "failed-resurrect", "--budget", "30"]) == 0
    out = capsys.readouterr().out
    assert "failed-resurrect on buggy: simulation found a counterexample:" in out
    block = out.split("simulation found a counterexample:", 1)[1]
    assert "invariant cleared-stays-cleared" in block and "   1 " in block
    replay = block.split("replay: python -m reference --replay ", 1)[1].split()[0]
    assert replay_file(replay) == 1 and replay_file(replay, reference.fixed) == 0


def test_the_default_runs_third_party_imports_are_base_dependencies() -> None:
    # `pip install -e .` (the README's first command) must be enough for `python -m reference`,
    # which runs the simulation and the explorations.
    import ast
    import sys
    import tomllib

    root = Path(__file__).parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    base = {dep.split("=")[0].split(">")[0].split("[")[0].strip().lower() for dep in declared}
    files = [*sorted((root / "reference" / "sim").glob("*.py")), root / "reference" / "harness" / "deep.py"]
    for file in files:
        for node in ast.walk(ast.parse(file.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for top in {name.split(".")[0] for name in names}:
                if top not in sys.stdlib_module_names and top != "reference":
                    dist = {"zmq": "pyzmq"}.get(top, top)  # the import name, and the package's
                    assert dist.lower() in base, f"{file.name} imports {top}, not a base dependency"


RESTART_PLANS = [  # (a hardened-based wrong fix, the plan's steps, its faults, the invariant it breaks)
    ("fail_while_restarting", [("quick_restart", 0, 0)], ("quick_restart",), "restart-recovered"),
    ("retry_every_ms", [("quick_restart", 0, 0)], ("quick_restart",), "retry-backs-off"),
    ("no_resend", [("restart_in_flight", 0, 0)], ("restart_in_flight",), "restart-recovered"),
    ("wait_without_bound", [("stuck", 0, 0), ("request", 0, 0)], ("stuck",), "bounded-wait"),
    ("partition_never_invalidated", [("request", 0, 0), ("pause", 0, 0), ("request", 0, 0)], ("pause",),
     "failed-entry-invalidated"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("wrong", "steps", "faults", "invariant"), RESTART_PLANS, ids=[p[0] for p in RESTART_PLANS]
)
def test_restart_recovery_invariants_hold_on_hardened_and_catch_the_wrong_fix(
    wrong: str, steps: list[tuple[str, int, int]], faults: tuple[str, ...], invariant: str
) -> None:
    from importlib import import_module

    planned = plan(steps, ("latency", *faults))
    assert run_for("restart-recovery", reference.hardened, planned) is None
    variant = import_module(f"reference.lessons.restart_recovery.wrong_fixes.{wrong}")
    broke = run_for("restart-recovery", variant, planned)
    assert broke is not None and broke.invariant == invariant, broke


def test_residual_faults_catch_what_hardened_keeps_per_request() -> None:
    from reference.lessons.failure_records.wrong_fixes import clear_keeps_tracking, record_for_cleared
    from reference.lessons.room_reuse.wrong_fixes import any_status_opens, failed_not_terminal

    cases = [
        ("failure-records", record_for_cleared, [("request", 0, 0), ("poll", 0, 0), ("late_record", 0, 0)],
         ("late_record",), "whole-state-bound"),
        ("failure-records", clear_keeps_tracking, [("request", 0, 0), ("poll", 0, 0)], ("mooncake",),
         "whole-state-bound"),
        ("room-reuse", any_status_opens, [("request", 0, 0), ("poll", 0, 0), ("late_status", 0, 0)],
         ("late_status",), "cleared-stays-cleared-any-status"),
        ("room-reuse", failed_not_terminal, [("request", 0, 0), ("fail_open", 0, 0), ("tick", 0, 0)],
         ("latency", "fail_open"), "failed-is-terminal"),
    ]  # fmt: skip
    for lesson, variant, steps, faults, invariant in cases:
        planned = plan(steps, faults)
        assert run_for(lesson, reference.hardened, planned) is None, (lesson, steps)
        broke = run_for(lesson, variant, planned)
        assert broke is not None and broke.invariant == invariant, (variant.__name__, broke)
