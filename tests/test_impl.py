"""Every check of every lesson against one variant module, expected `ok`: `pytest --impl MODULE`.

Without `--impl` the module is `reference.hardened` (ok on every lesson, the residual
ones included; see reference/harness/pytest_plugin.py).
One test per check (the lesson's story is its first check, `story`), each run as the CLI
runs it: in a worker process under the same time bound, so a variant that hangs fails its
test with `unknown: hit its time bound` instead of hanging pytest. A failure prints the
check's verdict and symptom, which say what your variant got wrong.
"""

import pytest

from reference.harness.isolation import IsolationError, run_isolated
from reference.lessons import LESSONS, Options

CHECKS = [
    pytest.param(lesson.id, check.id, id=f"{lesson.id}/{check.id}", marks=pytest.mark.lesson(id=lesson.id))
    for lesson in LESSONS.values()
    for check in lesson.checklist("mock")
    if not check.configuration  # a named configuration of upstream's (tests/test_upstream_configs.py)
]


DEEP_BUDGET = 8.0  # seconds for a deep check (the simulation, an exploration) of one lesson


@pytest.mark.parametrize(("lesson_id", "check_id"), CHECKS)
def test_check_holds(impl_variant, impl_timeout, lesson_id, check_id):
    deep = LESSONS[lesson_id].check(check_id).deep
    options = Options(check=check_id, budget=DEEP_BUDGET if deep else 0.0)
    try:
        (result,) = run_isolated([LESSONS[lesson_id]], impl_variant, options, impl_timeout)
    except IsolationError as exc:
        pytest.fail(f"{lesson_id}/{check_id} on {impl_variant.label}: {exc}", pytrace=False)
    if result.verdict != "ok":
        where = f"{lesson_id}/{check_id} on {result.variant}"
        pytest.fail(f"{where}: {result.verdict}: {result.symptom}", pytrace=False)
