"""Shared assertions for the lesson checklist tests (`test_<lesson>_checks.py`).

Every check of a lesson must hold on `reference.fixed` and fail on `reference.buggy`
(except the ones the lesson README justifies: guards against over-reaching fixes that
the buggy form passes too), every check must cite its upstream source by link, and
every tempting wrong fix in the lesson's gallery (`reference/lessons/<id>/wrong_fixes/`)
must come out `bug` through `--impl`, caught by the check the README names.
"""

from __future__ import annotations

import pkgutil
import re
from importlib import import_module

from reference.harness.checks import STORY
from reference.harness.lesson import run_check, run_lesson
from reference.harness.result import Result
from reference.lessons import LESSONS, Options
from reference.variants import load_impl, shipped

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def check_ids(lesson_id: str) -> list[str]:
    """The lesson's hand-built checks (the deep ones, simulation and explorations, have their
    own tests: tests/test_sim.py, tests/test_explore*.py, the gallery tests)."""
    return [check.id for check in LESSONS[lesson_id].checks if not check.deep]


def verdict_on(variant_name: str, lesson_id: str, check_id: str) -> tuple[str, str]:
    lesson = LESSONS[lesson_id]
    result = run_check(lesson, lesson.check(check_id), shipped(variant_name), Options())
    return result.verdict, result.symptom


def gallery_modules(lesson_id: str) -> list[str]:
    package = import_module(f"reference.lessons.{lesson_id.replace('-', '_')}.wrong_fixes")
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__))


def run_gallery_fix(lesson_id: str, module: str) -> Result:
    dotted = f"reference.lessons.{lesson_id.replace('-', '_')}.wrong_fixes.{module}"
    return run_lesson(LESSONS[lesson_id], load_impl(dotted), Options())


def assert_caught(result: Result, catching: str) -> None:
    failing = {check.id: check for check in result.checks if check.verdict == "bug"}
    assert result.verdict == "bug", f"{result.variant}: {result.verdict}: {result.symptom}"
    assert catching in failing, f"{result.variant}: {catching} did not catch it; failing: {sorted(failing)}"
    if catching != STORY:
        assert catching in result.symptom, result.symptom  # the lesson's symptom names it


def assert_well_formed(lesson_id: str) -> None:
    ids = check_ids(lesson_id)
    assert ids and len(ids) == len(set(ids)) and STORY not in ids
    for check in LESSONS[lesson_id].checks:
        assert KEBAB.match(check.id), check.id
        assert check.claim and "\n" not in check.claim, check.id
        assert "https://github.com/sgl-project/sglang/pull/" in check.source, check.id
