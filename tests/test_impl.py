"""Every lesson against one variant module, expected `ok`: `pytest --impl MODULE`.

Without `--impl` the module is `reference.hardened` (see tests/impl_option.py). Each lesson
runs as the CLI runs it: in a worker process under the same time bound, so a variant
that hangs fails its test with `unknown: hit its time bound` instead of hanging pytest.
A failure prints the lesson's verdict and symptom, which say what your variant got wrong.
"""

import pytest

from reference.harness.isolation import IsolationError, run_isolated
from reference.lessons import LESSONS, Options


@pytest.mark.parametrize(
    "lesson_id", [pytest.param(lesson, marks=pytest.mark.lesson(id=lesson)) for lesson in LESSONS]
)
def test_lesson_holds(impl_variant, impl_timeout, lesson_id):
    try:
        (result,) = run_isolated([LESSONS[lesson_id]], impl_variant, Options(), impl_timeout)
    except IsolationError as exc:
        pytest.fail(f"{lesson_id} on {impl_variant.label}: {exc}", pytrace=False)
    if result.verdict != "ok":
        pytest.fail(f"{lesson_id} on {result.variant}: {result.verdict}: {result.symptom}", pytrace=False)
