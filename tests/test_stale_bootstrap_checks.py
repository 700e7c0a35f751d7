"""The checklist of lesson `stale-bootstrap` (reference/lessons/stale_bootstrap/checks.py).

Every check holds on the fixed form and fails on the buggy form, except the guards
the buggy form passes for a reason given in the lesson README (it never invalidates,
so it can drop nothing; it caches; it registers before caching since sglang 0.5.17). Every
tempting wrong fix of the gallery (`reference/lessons/stale_bootstrap/wrong_fixes/`) gets
the lesson verdict `bug`, from the check the README names for it.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from checklist_gallery import (
    assert_caught,
    default_run_options,
    exploration_options,
    gallery_case,
    wrong_fix_options,
)

import reference.buggy
import reference.fixed
from reference.harness.lesson import run_check, run_lesson
from reference.lessons import LESSONS, Options
from reference.lessons.stale_bootstrap.checks import CHECKS
from reference.variants import Variant, load_impl

pytestmark = pytest.mark.lesson(id="stale-bootstrap")

LESSON = LESSONS["stale-bootstrap"]
REPO = Path(__file__).resolve().parents[1]
GALLERY = "reference.lessons.stale_bootstrap.wrong_fixes"
BUGGY_PASSES = {
    "other-prefill-survives",
    "registered-before-cached",
    "success-keeps-cache",
}

# Each wrong fix and the check that must catch it (others may catch it too).
CAUGHT_BY = {
    f"{GALLERY}.send_pop_by_key": "story",
    f"{GALLERY}.by_key": "replacement-survives",
    f"{GALLERY}.by_address": "replacement-survives",
    f"{GALLERY}.clear_pool": "other-prefill-survives",
    f"{GALLERY}.first_key_only": "simulation",
    f"{GALLERY}.no_timeout_invalidation": "story",
    f"{GALLERY}.no_send_invalidation": "failure-recorded",
    f"{GALLERY}.no_fetch_invalidation": "failure-recorded",
    f"{GALLERY}.no_registration_invalidation": "failure-recorded",
    f"{GALLERY}.connect_outside_try": "failure-recorded",
    f"{GALLERY}.last_writer_wins": "concurrent-fill-adopts",
    f"{GALLERY}.keep_own_copy": "concurrent-fill-adopts",
    f"{GALLERY}.cache_before_register": "registered-before-cached",
    f"{GALLERY}.refresh_in_place": "replacement-survives",
    f"{GALLERY}.invalidate_on_clear": "success-keeps-cache",
    f"{GALLERY}.equal_not_identical": "simulation",
    f"{GALLERY}.unlocked_identity": "explore-invalidation-vs-replacement",
    f"{GALLERY}.unlocked_lookup": "explore-hit-vs-eviction",
    f"{GALLERY}.forget_without_disconnect": "simulation",
    f"{GALLERY}.timeout_without_abort": "simulation",
    f"{GALLERY}.abort_without_latch": "simulation",
    f"{GALLERY}.send_to_every_rank": "simulation",
    f"{GALLERY}.send_without_infos_check": "simulation",
}
# Wrong fixes every hand-built check passes: the simulation catches `equal_not_identical`
# (invariant `invalidate-own-only`); the other two race inside one call and an exploration
# catches each (`explore-hit-vs-eviction`, `explore-invalidation-vs-replacement`). None is
# left uncaught (module -> the property it breaks, while one is).
NOT_CAUGHT_YET: dict[str, str] = {}
CAUGHT = [
    gallery_case(module, check_id, module in NOT_CAUGHT_YET, id=module.split(".")[-1])
    for module, check_id in CAUGHT_BY.items()
]
IDS = [check.id for check in CHECKS if not check.configuration]  # configured: tests/test_upstream_configs.py


def _run(module, check_id):
    variant = Variant(module.__name__, module, "ok")
    return run_check(LESSON, LESSON.check(check_id), variant, Options())


@pytest.mark.parametrize("check_id", IDS)
def test_check_holds_on_the_fixed_form(check_id):
    result = _run(reference.fixed, check_id)
    assert result.verdict == "ok", result.symptom


@pytest.mark.parametrize("check_id", IDS)
def test_check_on_the_buggy_form(check_id):
    result = _run(reference.buggy, check_id)
    expected = "ok" if check_id in BUGGY_PASSES else "bug"
    assert result.verdict == expected, result.symptom
    assert result.symptom


def test_every_check_is_documented_and_sourced():
    readme = (REPO / "reference/lessons/stale_bootstrap/README.md").read_text()
    assert len(set(IDS)) == len(IDS)
    for check in CHECKS:
        assert f"`{check.id}`" in readme, check.id
        assert "https://github.com/sgl-project/sglang/pull/36029" in check.source, check.id
    for module in CAUGHT_BY:
        stem = Path(module).stem if module.endswith(".py") else module.rsplit(".", 1)[-1]
        assert stem in readme, module


def test_the_gallery_is_complete():
    shipped = {p.stem for p in (REPO / "reference/lessons/stale_bootstrap/wrong_fixes").glob("*.py")}
    listed = {name.rsplit(".", 1)[-1] for name in CAUGHT_BY if name.startswith(GALLERY)}
    assert shipped - {"__init__"} == listed


# Caught by the simulation only with the runs the default run plans (138 of them catch it;
# SIM_BUDGET's 60, its floor, do not restart a prefill on its own ports before an old request fails).
DEFAULT_RUN_ONLY = {f"{GALLERY}.equal_not_identical"}


@pytest.mark.parametrize(("module", "check_id"), CAUGHT)
def test_wrong_fix_is_caught(module, check_id):
    if module in DEFAULT_RUN_ONLY:
        options = default_run_options(check_id, LESSON.id)
    elif check_id.startswith("explore-"):
        options = exploration_options(check_id, LESSON.id)
    else:
        options = wrong_fix_options(check_id)
    result = run_lesson(LESSON, load_impl(module), options)
    assert_caught(result, check_id)


def test_the_cli_rejects_a_wrong_fix():
    run = subprocess.run(
        [sys.executable, "-m", "reference", "--impl", f"{GALLERY}.by_key", "--verbose", "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "replacement-survives" in run.stdout
