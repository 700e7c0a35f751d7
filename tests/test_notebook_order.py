"""A lesson notebook poses its exercise before it shows the answer.

In each fix lesson (01 to 04) the learner's own fix (the first cell whose first line is
`# EXERCISE:`) comes before the first cell that shows the fixed method or upstream's hunk:
our diff, a method whole before and after, a source listing of the fixed form, upstream's
release hunk, or the fixed form's sequence picture (it names the fixed step). In 06, whose
exercise hardens `failure_records`, it comes before that lesson's `HARDEN` diff (the other
lessons' diffs, earlier, answer other questions). Read from the committed `.ipynb`, the
cells a reader sees, in their order.
"""

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LESSON_NOTEBOOKS = [
    "01_failed_resurrect.ipynb",
    "02_live_set_race.ipynb",
    "03_stale_bootstrap.ipynb",
    "04_task_refs.ipynb",
]
REVEALS = (  # calls whose output shows the fixed code or upstream's hunk
    "diffs.fix_diff(",
    "sources.before_after(",
    "sources.source(reference.fixed",
    "upstream_hunks.upstream_hunks(",
    '"fixed"))',  # plots.sequence_picture(sequences.interleaving(lesson, "fixed"))
)


def _code_cells(name: str) -> list[str]:
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def first_exercise_and_reveal(sources: list[str]) -> tuple[int | None, int | None]:
    """Index of the first `# EXERCISE:` cell and of the first cell that reveals the fix."""
    exercise = next((i for i, s in enumerate(sources) if s.startswith("# EXERCISE:")), None)
    reveal = next((i for i, s in enumerate(sources) if any(r in s for r in REVEALS)), None)
    return exercise, reveal


HARDENED = "06_hardened.ipynb"
HARDENED_REVEAL = 'hardened.harden_diff("failure-records")'


def test_the_order_check_sees_a_reveal_before_the_exercise():
    assert first_exercise_and_reveal(['diffs.fix_diff("x")', "# EXERCISE: fix it"]) == (1, 0)


@pytest.mark.parametrize("name", LESSON_NOTEBOOKS)
def test_exercise_comes_before_the_answer(name):
    exercise, reveal = first_exercise_and_reveal(_code_cells(name))
    assert exercise is not None, f"{name}: no `# EXERCISE:` cell"
    assert reveal is not None, f"{name}: no cell shows the fix (the check looks for {REVEALS})"
    assert exercise < reveal, (
        f"{name}: code cell {reveal} shows the fix before the exercise (code cell {exercise})"
    )


def test_hardened_exercise_comes_before_its_diff():
    sources = _code_cells(HARDENED)
    exercise, _ = first_exercise_and_reveal(sources)
    reveal = next((i for i, src in enumerate(sources) if HARDENED_REVEAL in src), None)
    assert exercise is not None and reveal is not None, f"{HARDENED}: no exercise, or no {HARDENED_REVEAL}"
    assert exercise < reveal, f"{HARDENED}: the failure-records diff (cell {reveal}) precedes the exercise"
