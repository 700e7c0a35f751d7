"""Lesson `live-set-race`'s checklist: fixed holds every check, buggy fails the ones the
fix is about, and every wrong fix of the gallery is caught by the check named (the
simulation's, `simulation`, within the deep-check budget the gallery tests give it)."""

import pytest
from checklist_gallery import (
    assert_caught,
    assert_well_formed,
    check_ids,
    gallery_modules,
    run_gallery_fix,
    verdict_on,
    wrong_fix_options,
)

LESSON = "live-set-race"
pytestmark = pytest.mark.lesson(id=LESSON)

BUGGY_PASSES = {  # guards against over-reaching fixes (README)
    "failed-prefill-forgotten",
    "probe-prunes-cleared-rooms",
}
GALLERY = {
    "live_set_pop": "every-affected-room-failed",
    "lock_across_loop": "every-affected-room-failed",
    "catch_and_continue": "every-affected-room-failed",
    "retry_once": "every-affected-room-failed",
    "heartbeat_swallows": "every-affected-room-failed",
    "swap_tracker": "every-affected-room-failed",
    "fail_on_first_miss": "simulation",  # dead-only-after-misses-in-a-row
    "count_never_reset": "simulation",  # whole-state-bound first; dead-only-after-misses-in-a-row too
    "heartbeat_not_daemon": "simulation",  # threads-alive
}


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
    rooms = verdict_on("buggy", LESSON, "every-affected-room-failed")[1]
    assert "after room 1: 6 of 8" in rooms and "Set changed size during iteration" in rooms


def test_every_gallery_module_is_listed():
    assert gallery_modules(LESSON) == sorted(GALLERY)


@pytest.mark.parametrize(("module", "catching"), GALLERY.items())
def test_wrong_fix_is_caught(module, catching):
    assert_caught(run_gallery_fix(LESSON, module, wrong_fix_options(catching, LESSON)), catching)
