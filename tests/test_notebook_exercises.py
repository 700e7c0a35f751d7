"""Each lesson notebook ends with a coding exercise the suite checks, as a learner runs it.

The notebook's cells are executed as they stand in its `.py` twin (the import cell, then
each `# EXERCISE:` cell and the `check_fix` cell after it), through the same helpers
(`reference.teaching.exercises`):

- as committed, the learner's cell holds the buggy code: the checklist says `bug`;
- with the right answer filled in (below, as a learner would write it): `ok`;
- the notebook's tempting wrong fix: `bug`, caught by the named check.

Where the check cell also asks for the lesson's explorations (`explore=True`, 01 and 02),
the right answer must hold over every interleaving the explorer runs, and the wrong fix
must be caught by the named exploration too, with its counterexample's trace.
"""

import ast
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="needs the `notebooks` extra (jupytext)")

from reference.lessons import LESSONS  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
MARK = "# EXERCISE:"

RIGHT = {
    "01_failed_resurrect": """# EXERCISE: the right answer
class KVManager(reference.buggy.KVManager):
    def update_status(self, bootstrap_room, status):
        if bootstrap_room not in self.request_status:
            if status == KVPoll.Failed:
                return
            self.request_status[bootstrap_room] = status
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)
""",
    "02_live_set_race": """# EXERCISE: the right answer
class KVManager(reference.buggy.KVManager):
    def _handle_node_failure(self, failed_bootstrap_addr):
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = list(self.addr_to_rooms_tracker.pop(addr, ()))
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)
""",
    "03_stale_bootstrap": """# EXERCISE: the right answer
class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self):
        with self.kv_mgr.connection_lock:
            for key, infos in self._connection_pool_entries.items():
                if self.kv_mgr.connection_pool.get(key) is infos:
                    del self.kv_mgr.connection_pool[key]
        self._connection_pool_entries.clear()
""",
    "04_task_refs": """# EXERCISE: the right answer
class DPDispatcher(reference.buggy.DPDispatcher):
    def start(self):
        self.loops = {asyncio.create_task(self._result_listener()),
                      asyncio.create_task(self._worker_watchdog()),
                      asyncio.create_task(self._cleanup_stale_mappings())}
        for task in self.loops:
            task.add_done_callback(self.loops.discard)


class BootstrapServer(reference.buggy.BootstrapServer):
    def _start_background_tasks(self, loop):
        self.loops = {loop.create_task(self._cleanup_expired_entries())}
        for task in self.loops:
            task.add_done_callback(self.loops.discard)
""",
    # 06 hardens the fixed form: the learner subclasses reference.fixed's component, and
    # reference.teaching.hardened fills the rest from reference.fixed.
    "06_hardened": """# EXERCISE: the right answer
class KVManager(reference.fixed.KVManager):
    def record_failure(self, bootstrap_room, reason):
        with self.failure_lock:
            if bootstrap_room in self.request_status:
                self.failure_records[bootstrap_room] = reason
""",
}
# The check that must name each notebook's tempting wrong fix.
WRONG_CAUGHT_BY = {
    "01_failed_resurrect": "story",
    "02_live_set_race": "story",
    "03_stale_bootstrap": "replacement-survives",
    "04_task_refs": "story",
    "06_hardened": "story",
}


# The exploration that must catch each race notebook's tempting wrong fix (the check cell
# passes explore=True): the explorer finds it with no hook, on its own.
WRONG_EXPLORED_BY = {
    "01_failed_resurrect": "late-failed-after-clear",
    "02_live_set_race": "every-affected-room-failed",
}


def _cells(name: str) -> list[str]:
    notebook = jupytext.read(NOTEBOOKS / f"{name}.py")
    return [c.source for c in notebook.cells if c.cell_type == "code"]


def _run(source: str, namespace: dict):
    """Execute a cell as Jupyter does, returning what it shows: the value of its last
    expression, or the one value a last `show(...)` or `print(...)` would show (not shown here)."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is None:
        return None
    value = last.value
    shown = (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("show", "print")
    )
    if shown and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    return eval(compile(ast.Expression(value), "<cell>", "eval"), namespace)


def _exercises(name: str) -> tuple[str, list[tuple[str, str]]]:
    """The import cell and each (exercise cell, the check cell after it)."""
    cells = _cells(name)
    pairs = [(cells[i], cells[i + 1]) for i, src in enumerate(cells) if src.startswith(MARK)]
    assert len(pairs) >= 2, f"{name}: needs the learner's exercise and a tempting wrong fix"
    # 06 hardens the fixed form: its checker is `hardened.check_fix`, over `exercises.check_fix`.
    checkers = ("exercises.check_fix(", "hardened.check_fix(")
    assert all(any(c in check for c in checkers) for _, check in pairs), f"{name}: a check cell follows each"
    return cells[0], pairs


def _report(name: str, imports: str, exercise: str, check: str):
    namespace: dict = {}
    _run(imports, namespace)
    _run(exercise, namespace)
    return _run(check, namespace)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(RIGHT))
def test_committed_exercise_shows_the_bug_and_the_right_answer_passes(name):
    imports, [(exercise, check), *_] = _exercises(name)
    committed = _report(name, imports, exercise, check)
    assert committed.verdict == "bug", f"as committed the exercise should show the bug:\n{committed}"
    assert "story" in committed.failing()
    answered = _report(name, imports, exercise + "\n\n" + RIGHT[name], check)
    assert answered.verdict == "ok", f"the right answer is rejected:\n{answered}"
    assert len(answered.result.checks) >= 1 and "OK" in str(answered)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRONG_CAUGHT_BY))
def test_tempting_wrong_fix_is_rejected_by_its_named_check(name):
    imports, [(exercise, _), (wrong, check), *_] = _exercises(name)
    lesson = next(lesson for lesson in LESSONS.values() if f'"{lesson.id}"' in check)
    named = WRONG_CAUGHT_BY[name]
    if named not in {c.id for c in lesson.checklist("mock")}:
        pytest.skip(f"{lesson.id}'s checklist has no {named!r} check yet (the story alone accepts it)")
    report = _report(name, imports, exercise + "\n\n" + wrong, check)
    assert report.verdict == "bug", f"the tempting wrong fix is accepted:\n{report}"
    assert named in report.failing(), f"not caught by {named}:\n{report}"
    assert f"BUG     {named}" in str(report)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(WRONG_EXPLORED_BY))
def test_the_explorer_passes_the_right_answer_and_catches_the_wrong_fix(name):
    imports, [(exercise, check), (wrong, wrong_check), *_] = _exercises(name)
    assert "explore=True" in check and "explore=True" in wrong_check, f"{name}: the checker runs the explorer"
    answered = _report(name, imports, exercise + "\n\n" + RIGHT[name], check)
    claimed = [f for f in answered.explored.findings if f.claimed]
    assert claimed and all(f.verdict == "ok" and f.interleavings > 0 for f in claimed), str(answered)
    assert "holds over all" in str(answered) and answered.verdict == "ok"
    named = WRONG_EXPLORED_BY[name]
    report = _report(name, imports, exercise + "\n\n" + wrong, wrong_check)
    assert named in report.explored.failing(), f"the explorer misses the wrong fix:\n{report}"
    assert f"BUG     {named}: " in str(report)
    assert f"{named}: the counterexample (schedule " in str(report) and "T0 " in str(report)
    assert "Checklist and explorer together: BUG." in str(report)


def test_an_exploration_that_hangs_is_stopped_at_the_bound_and_is_unknown():
    import time

    import reference.buggy
    from reference.teaching import exercises

    class Hanging(reference.buggy.KVManager):
        def __init__(self, *args, **kwargs):
            time.sleep(60)  # in the explorer's child, which is killed at the bound

    start = time.monotonic()
    found = exercises.explorations("live-set-race", exercises.variant_from({"KVManager": Hanging}), bound=2)
    assert time.monotonic() - start < 10
    assert found.inconclusive and "stopped at its 2 s bound" in str(found)
    assert found.verdicts() == ["unknown"]


def test_a_lesson_without_explorations_says_so_and_judges_nothing():
    import reference.fixed
    from reference.teaching import exercises

    found = exercises.explorations("task-refs", reference.fixed)
    assert not found.findings and not found.inconclusive and found.verdicts() == []
    assert "task-refs has no exploration" in str(found)


# Further tempting wrong fixes (by position among a notebook's `# EXERCISE:` cells), each one
# the lesson's story accepts, and the check that must name it.
FURTHER_WRONG = {
    ("03_stale_bootstrap", 2): "other-prefill-survives",
    ("04_task_refs", 2): "two-dispatchers-independent",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("name", "index"), sorted(FURTHER_WRONG))
def test_further_wrong_fixes_pass_the_story_and_are_named_by_a_check(name, index):
    imports, pairs = _exercises(name)
    assert len(pairs) > index, f"{name}: no exercise cell #{index}"
    (exercise, _), (wrong, check) = pairs[0], pairs[index]
    report = _report(name, imports, exercise + "\n\n" + wrong, check)
    named = FURTHER_WRONG[(name, index)]
    assert report.verdict == "bug", f"the tempting wrong fix is accepted:\n{report}"
    assert "story" not in report.failing(), f"the story alone should accept it:\n{report}"
    assert named in report.failing() and f"BUG     {named}" in str(report)
