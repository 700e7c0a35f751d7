"""Every lesson against one variant module, expected `ok`: `pytest --impl MODULE`.

Without `--impl` the module is `reference.hardened` (see tests/impl_option.py). A failure
prints the lesson's verdict and symptom, which say what your variant got wrong.
"""

import pytest

from reference.lessons import LESSONS, Options, run_lesson


@pytest.mark.parametrize(
    "lesson_id", [pytest.param(lesson, marks=pytest.mark.lesson(id=lesson)) for lesson in LESSONS]
)
def test_lesson_holds(impl_variant, lesson_id):
    result = run_lesson(LESSONS[lesson_id], impl_variant, Options())
    if result.verdict != "ok":
        pytest.fail(f"{lesson_id} on {impl_variant.name}: {result.verdict}: {result.symptom}", pytrace=False)
