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

import pytest

from reference.harness.checks import STORY
from reference.harness.lesson import run_check, run_lesson
from reference.harness.result import Result
from reference.lessons import LESSONS, Options
from reference.variants import load_impl, shipped

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def check_ids(lesson_id: str) -> list[str]:
    """The lesson's hand-built checks (the deep ones, simulation and explorations, have their
    own tests: tests/test_sim.py, tests/test_explore*.py, the gallery tests; a configured
    one, upstream's only: tests/test_upstream_configs.py)."""
    return [check.id for check in LESSONS[lesson_id].checks if not check.deep and not check.configuration]


def verdict_on(variant_name: str, lesson_id: str, check_id: str) -> tuple[str, str]:
    lesson = LESSONS[lesson_id]
    check = lesson.check(check_id)
    options = Options(budget=SIM_BUDGET) if check.deep else Options()  # a deep check needs its budget
    result = run_check(lesson, check, shipped(variant_name), options)
    return result.verdict, result.symptom


def gallery_modules(lesson_id: str) -> list[str]:
    package = import_module(f"reference.lessons.{lesson_id.replace('-', '_')}.wrong_fixes")
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__))


# Deep-check budget (seconds per lesson run) for a wrong fix a deep check must catch: the
# simulation plans a fixed number of runs from it (5 s: 60 runs, its floor `MIN_RUNS`, the same
# plans on any machine), so what it catches is measured at exactly this budget; a
# different budget draws different plans. Change it and re-measure the xfail marks.
SIM_BUDGET = 5.0
NOT_YET = "caught once the simulation lands"
# A wrong fix whose mistake falls between two dict operations of one call: the simulation
# (whole calls, one at a time) cannot place it; a DPOR exploration can. Caught by a deep
# check, whichever: an exploration once explorations are deep checks of the lesson.
DEEP = "deep"
DEEP_BUDGET = 30.0  # the lesson's explorations share 40% of it: over 1 s each for stale-bootstrap's 8
NOT_YET_DEEP = "caught once the explorations are deep checks (an interleaving inside one call)"


def default_run_budget(lesson_id: str) -> float:
    """The lesson's deep-check seconds in the default run (every lesson, the default `--budget`)."""
    from reference.harness import deep

    lessons = list(LESSONS.values())
    return deep.lesson_budgets(lessons, deep.DEFAULT_BUDGET, Options(), lessons)[lesson_id]


def default_run_options(catching: str, lesson_id: str) -> Options:
    """One deep check alone, with the budget the default run gives the lesson: the simulation
    then plans exactly the default run's runs (`--impl X`), for a wrong fix whose only
    counterexamples are rarer than SIM_BUDGET's runs draw."""
    return Options(check=catching, budget=default_run_budget(lesson_id))


def exploration_pool(lesson_id: str) -> float:
    """Seconds the lesson's explorations share in the default run: the most one of them can
    have there, so a wrong fix that one exploration must catch runs that exploration alone
    within it."""
    from reference.sim.check import share_of
    from reference.sim.profiles import PROFILES

    budget = default_run_budget(lesson_id)
    return budget * (1.0 - share_of(lesson_id)) if lesson_id in PROFILES else budget


def exploration_options(catching: str, lesson_id: str) -> Options:
    """One named exploration alone, within what the default run gives the lesson's explorations."""
    return Options(check=catching, budget=exploration_pool(lesson_id))


def wrong_fix_options(catching: str, lesson_id: str | None = None) -> Options:
    """Quick for a hand-built check; the deep checks, with a budget, for the simulation.
    With `lesson_id`, the budget leaves the simulation SIM_BUDGET itself, whatever share
    the lesson's explorations take (a lesson that gains one keeps its measured plans)."""
    if catching not in ("simulation", DEEP):
        return Options(quick=True)
    if catching == DEEP:  # an exploration catches it: time for each exploration's first round
        return Options(budget=DEEP_BUDGET)
    if lesson_id is None:
        return Options(budget=SIM_BUDGET)
    from reference.sim.check import share_of

    return Options(budget=SIM_BUDGET / share_of(lesson_id))


def gallery_case(module: str, catching: str, not_yet: bool, **param_kwargs) -> object:
    """One wrong fix's test case; `xfail(strict=True)` while no deep check catches it."""
    reason = NOT_YET_DEEP if catching == DEEP else NOT_YET
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if not_yet else []
    return pytest.param(module, catching, marks=marks, **param_kwargs)


def run_gallery_fix(lesson_id: str, module: str, options: Options | None = None) -> Result:
    dotted = f"reference.lessons.{lesson_id.replace('-', '_')}.wrong_fixes.{module}"
    return run_lesson(LESSONS[lesson_id], load_impl(dotted), options or Options())


def assert_caught(result: Result, catching: str) -> None:
    failing = {check.id: check for check in result.checks if check.verdict == "bug"}
    assert result.verdict == "bug", f"{result.variant}: {result.verdict}: {result.symptom}"
    if catching == DEEP:  # whichever deep check it is (the simulation, an exploration)
        lesson = LESSONS[result.lesson]
        deep = sorted(i for i in failing if i != STORY and lesson.check(i).deep)
        assert deep, f"{result.variant}: no deep check caught it; failing: {sorted(failing)}"
        catching = deep[0]
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
