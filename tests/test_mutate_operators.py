"""The semantic mutation operators (reference/mutate/operators.py) make exactly the edits they
claim, on tiny sources; the runner judges a known-killed and a known-equivalent mutant of
`reference/fixed` as such. The full run (ci/semantic_mutation.sh) is outside CI."""

from __future__ import annotations

import textwrap

import pytest

from reference.mutate.mutants import generate
from reference.mutate.operators import OPERATORS, mutate
from reference.mutate.runner import Judge, compare, only_bounds


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _edits(operator: str, code: str) -> list[str]:
    return [e.source for e in mutate(_src(code), [operator])]


LOCKED = """
class C:
    def f(self):
        a = 0
        with self.lock:
            b = 1
            c = 2
        d = 3
"""


def test_remove_lock_keeps_the_body():
    assert _edits("remove-lock", LOCKED) == [
        _src("""
        class C:
            def f(self):
                a = 0
                b = 1
                c = 2
                d = 3
        """)
    ]


def test_shrink_lock_moves_the_first_or_the_last_statement_out():
    assert _edits("shrink-lock", LOCKED) == [
        _src("""
        class C:
            def f(self):
                a = 0
                b = 1
                with self.lock:
                    c = 2
                d = 3
        """),
        _src("""
        class C:
            def f(self):
                a = 0
                with self.lock:
                    b = 1
                c = 2
                d = 3
        """),
    ]


def test_split_lock_makes_two_sections():
    assert _edits("split-lock", LOCKED) == [
        _src("""
        class C:
            def f(self):
                a = 0
                with self.lock:
                    b = 1
                with self.lock:
                    c = 2
                d = 3
        """)
    ]


def test_move_lock_shifts_the_section_down_and_up():
    down, up = _edits("move-lock", LOCKED)
    assert "b = 1\n        with self.lock:\n            c = 2\n            d = 3\n" in down
    assert "with self.lock:\n            a = 0\n            b = 1\n        c = 2\n" in up


def test_only_a_with_on_a_lock_is_a_critical_section():
    assert _edits("remove-lock", "def f(self):\n    with open('x') as g:\n        g.read()\n") == []


def test_is_to_eq_leaves_comparisons_with_none_alone():
    code = """
    def f(a, b):
        if a is b and a is not None and b is not a:
            return 1
    """
    assert _edits("is-to-eq", code) == [
        _src(code).replace("a is b", "a == b"),
        _src(code).replace("b is not a", "b != a"),
    ]


def test_delete_stmt_deletes_calls_and_assignments_and_leaves_pass_alone():
    code = """
    def f(self, t):
        self.tasks.add(t)
        x = 1
        if x:
            t.add_done_callback(self.tasks.discard)
        return x
    """
    edits = _edits("delete-stmt", code)
    assert _src(code).replace("    self.tasks.add(t)\n", "") in edits
    assert _src(code).replace("    x = 1\n", "") in edits
    assert _src(code).replace("t.add_done_callback(self.tasks.discard)", "pass") in edits
    assert len(edits) == 3  # `return x` and the `if` are not deleted


def test_swap_stmts_swaps_neighbours_but_not_the_docstring():
    code = '''
    def f():
        """Doc."""
        a()
        b()
    '''
    assert _edits("swap-stmts", code) == [_src(code).replace("a()\n    b()", "b()\n    a()")]


def test_early_return_at_each_function_statement_and_each_block_start():
    code = """
    def f(x):
        a()
        if x:
            b()
            c()
        return x
    """
    edits = _edits("early-return", code)
    assert _src(code).replace("    a()\n", "    return\n    a()\n") in edits
    assert _src(code).replace("    if x:\n", "    return\n    if x:\n") in edits
    assert _src(code).replace("        b()\n", "        return\n        b()\n") in edits
    assert len(edits) == 3  # not before c() (inside a nested block) nor before `return x`


def test_weak_ref_holds_a_set_attribute_in_a_weakset():
    code = """
    from __future__ import annotations

    class C:
        def __init__(self):
            self.tasks: set[int] = set()
            self.names = []
    """
    (edit,) = _edits("weak-ref", code)
    assert "from __future__ import annotations\nimport weakref\n" in edit
    assert "self.tasks: set[int] = weakref.WeakSet()" in edit


def test_local_ref_stores_into_a_local_container():
    code = """
    def start(self, t):
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)
    """
    assert _edits("local-ref", code) == [
        _src("""
        def start(self, t):
            _local_tasks = set()
            _local_tasks.add(t)
            t.add_done_callback(self.tasks.discard)
        """)
    ]


def test_move_guard_moves_a_leading_guard_around_one_caller():
    code = """
    class C:
        def send(self, items):
            if self.waiting:
                self.held = items
                return
            self.out(items)

        def poll(self):
            self.send(self.pending)
    """
    assert _edits("move-guard", code) == [
        _src("""
        class C:
            def send(self, items):
                self.out(items)

            def poll(self):
                if self.waiting:
                    self.held = self.pending
                else:
                    self.send(self.pending)
        """)
    ]


def test_identical_mutants_are_counted_once():
    code = "def f(self):\n    a()\n    a()\n"
    assert _edits("delete-stmt", code) == ["def f(self):\n    a()\n"]


def test_every_operator_has_a_test_here():
    tested = {
        "remove-lock", "shrink-lock", "split-lock", "move-lock", "is-to-eq", "delete-stmt",
        "swap-stmts", "early-return", "weak-ref", "local-ref", "move-guard",
    }  # fmt: skip
    assert set(OPERATORS) == tested


def test_compare_tells_kills_unknowns_and_survivors_apart():
    base = {"a": "ok", "a/story": "ok"}
    assert compare(base, dict(base)) == ("survived", [])
    assert compare(base, {"a": "bug", "a/story": "bug"})[0] == "killed"
    assert compare(base, {"a": "unknown", "a/story": "unknown"}) == (
        "unknown",
        ["a: ok -> unknown", "a/story: ok -> unknown"],
    )


def test_a_deep_check_out_of_time_is_a_bound_not_a_kill():
    diffs = ["stale-bootstrap: ok -> unknown", "stale-bootstrap/explore-hit-vs-eviction: ok -> unknown"]
    explore = (
        "stale-bootstrap/explore-hit-vs-eviction: no counterexample in 4 interleavings, "
        "but stopped at the 0.232 s bound (0.3 s)"
    )
    sim = "live-set-race/simulation: the time ran out after 52 of 61 planned runs (16.8 s)"
    assert only_bounds(diffs, explore) and only_bounds(diffs, f"{explore} | {sim}")
    assert not only_bounds(diffs, f"{explore} | stale-bootstrap/story: scenario raised KeyError: 1")
    assert not only_bounds([*diffs, "stale-bootstrap/story: ok -> bug"], explore)


def _fixed_mutant(operator: str, description: str):
    found = [
        m
        for m in generate(("fixed",))
        if m.file == "bootstrap_server.py"
        and m.edit.operator == operator
        and m.edit.description == description
    ]
    assert len(found) == 1, f"no single {operator} mutant {description!r} of fixed/bootstrap_server.py"
    return found[0]


@pytest.mark.slow  # the CLI in child processes
def test_runner_judges_a_killed_and_an_equivalent_mutant():
    killed = _fixed_mutant("delete-stmt", "`self._background_tasks.add(task)` deleted")
    # Equivalent: the done callback can run only once the task has finished, which needs
    # the loop, and nothing between the two statements yields to it.
    equivalent = _fixed_mutant(
        "swap-stmts",
        "`self._background_tasks.add(task)` swapped with the next "
        "`task.add_done_callback(self._background_tasks.discard)`",
    )
    assert killed.lessons == equivalent.lessons and "task-refs" in killed.lessons
    judge = Judge(timeout=120)
    try:
        out_killed, out_equivalent = judge.judge_all([killed, equivalent], jobs=2)
    finally:
        judge.close()
    assert out_killed.status == "killed", out_killed
    assert "task-refs: ok -> bug" in out_killed.differences
    assert out_equivalent.status == "survived", out_equivalent
