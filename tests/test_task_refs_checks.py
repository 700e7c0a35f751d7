"""Lesson `task-refs`'s checklist: fixed holds every check, buggy fails the ones the fix
is about, and every wrong fix of the gallery is caught by the check named."""

import pytest
from checklist_gallery import (
    assert_caught,
    assert_well_formed,
    check_ids,
    gallery_modules,
    run_gallery_fix,
    verdict_on,
)

from reference.lessons import LESSONS, Options, run_lesson
from reference.variants import Variant
from reference.variants import shipped as shipped_variant

LESSON = "task-refs"
pytestmark = pytest.mark.lesson(id=LESSON)

# The buggy form holds no task at all, so it cannot hold one too long; every form frees its
# port and loop (README).
BUGGY_PASSES = {"ended-loops-released", "closed-server-releases-task", "closed-server-releases-port"}
GALLERY = {
    "hold_only_watchdog": "two-dispatchers-independent",
    "hold_in_local_list": "story",
    "weakset_holder": "story",
    "never_discard": "ended-loops-released",
    "shared_by_name": "two-dispatchers-independent",
    "server_module_global": "two-servers-independent",
    "server_never_discard": "closed-server-releases-task",
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


def test_buggy_symptoms_name_the_destroyed_loops():
    for check_id, loops in (
        ("two-dispatchers-independent", ("_result_listener", "_worker_watchdog", "_cleanup_stale_mappings")),
        ("two-servers-independent", ("_cleanup_expired_entries",)),
    ):
        symptom = verdict_on("buggy", LESSON, check_id)[1]
        assert "Task was destroyed but it is pending!" in symptom, symptom
        for loop in loops:
            assert loop in symptom, symptom


def test_every_gallery_module_is_listed():
    assert gallery_modules(LESSON) == sorted(GALLERY)


@pytest.mark.parametrize(("module", "catching"), GALLERY.items())
def test_wrong_fix_is_caught(module, catching):
    assert_caught(run_gallery_fix(LESSON, module), catching)


def test_checks_of_a_component_declared_unavailable_are_not_run():
    """As the upstream adapter declares the DP dispatcher: its checks are not run, and
    the lesson decides from the bootstrap server's."""
    fixed = shipped_variant("fixed").module
    module = type(fixed)("declares_dispatcher_unavailable")
    module.__dict__.update(vars(fixed))
    module.UNAVAILABLE = {"DPDispatcher": "not loaded here"}  # type: ignore[attr-defined]
    result = run_lesson(LESSONS[LESSON], Variant("declares", module, "ok"), Options())
    ran = {check.id for check in result.checks}
    assert result.verdict == "ok", result.symptom
    assert "two-servers-independent" in ran and "two-dispatchers-independent" not in ran
