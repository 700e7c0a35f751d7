"""Every check of every lesson against one variant module, expected `ok`: `pytest --impl MODULE`.

Without `--impl` the module is `reference.fixed` (see reference/harness/pytest_plugin.py).
One test per check (the lesson's story is its first check, `story`); a failure prints the
check's verdict and symptom, which say what your variant got wrong.
"""

import pytest

from reference.harness.lesson import run_check
from reference.lessons import LESSONS, Options

CHECKS = [
    pytest.param(lesson.id, check.id, id=f"{lesson.id}/{check.id}", marks=pytest.mark.lesson(id=lesson.id))
    for lesson in LESSONS.values()
    for check in lesson.checklist("mock")
]


@pytest.mark.parametrize(("lesson_id", "check_id"), CHECKS)
def test_check_holds(impl_variant, lesson_id, check_id):
    lesson = LESSONS[lesson_id]
    result = run_check(lesson, lesson.check(check_id), impl_variant, Options())
    if result.verdict != "ok":
        pytest.fail(
            f"{lesson_id}/{check_id} on {impl_variant.name}: {result.verdict}: {result.symptom}",
            pytrace=False,
        )
