"""Lesson `failed-resurrect`'s checklist: fixed holds every check, buggy fails the ones
the fix is about, and every wrong fix of the gallery is caught by the check named."""

import pytest
from checklist_gallery import (
    assert_caught,
    assert_well_formed,
    check_ids,
    gallery_case,
    gallery_modules,
    run_gallery_fix,
    verdict_on,
    wrong_fix_options,
)

LESSON = "failed-resurrect"
pytestmark = pytest.mark.lesson(id=LESSON)

# Guards against over-reaching fixes: the buggy form keeps upstream's behaviour there
# (README, "Checks the buggy form passes").
BUGGY_PASSES = {"open-room-takes-failed"}
GALLERY = {
    "failed_terminal": "late-failed-never-recreates",
    "tombstone_in_clear": "open-room-takes-failed",
    "ignore_failed_always": "open-room-takes-failed",
    "ignore_absent_always": "simulation",  # poll raises: no-raise
    "guard_in_abort": "late-failed-never-recreates",
    "cleared_set_grows": "simulation",  # the tombstone set grows by one per request
}
NOT_CAUGHT_YET: set[str] = set()  # the simulation misses none of this gallery
CAUGHT = [gallery_case(module, catching, module in NOT_CAUGHT_YET) for module, catching in GALLERY.items()]


def test_checks_are_well_formed():
    assert_well_formed(LESSON)


@pytest.mark.parametrize("check_id", check_ids(LESSON))
def test_fixed_holds(check_id):
    verdict, symptom = verdict_on("fixed", LESSON, check_id)
    assert verdict == "ok", symptom


@pytest.mark.parametrize("check_id", check_ids(LESSON))
def test_buggy(check_id):
    verdict, symptom = verdict_on("buggy", LESSON, check_id)
    assert verdict == ("ok" if check_id in BUGGY_PASSES else "bug"), symptom


def test_buggy_symptoms_say_what_went_wrong():
    assert "40 of 40 cleared rooms came back" in verdict_on("buggy", LESSON, "late-failed-never-recreates")[1]


def test_every_gallery_module_is_listed():
    assert gallery_modules(LESSON) == sorted(GALLERY)


@pytest.mark.parametrize(("module", "catching"), CAUGHT)
def test_wrong_fix_is_caught(module, catching):
    options = wrong_fix_options(catching)
    assert_caught(run_gallery_fix(LESSON, module, options), catching)
