"""The residual lessons' galleries: every hardened-based wrong fix comes out `bug` on its lesson.

`reference/lessons/<id>/wrong_fixes/` of each residual lesson holds `reference.hardened`
with one item of that lesson's hardened design undone or done the tempting way (the
lesson README's gallery names the item). Each must be `bug` on its lesson, through
`--impl`'s loader and `run_lesson`, caught by the check named here: the story or a
hand-built check (run quick: supervised-loops' checks over every loop the components
start), or the seeded simulation (check `simulation`, run with a deep-check budget).
Those the simulation does not catch yet are marked `xfail(strict=True)`; the strict
mark fails as soon as it does, so the mark is removed then.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from pathlib import Path

import pytest
from checklist_gallery import DEEP, NOT_YET, NOT_YET_DEEP, assert_caught, wrong_fix_options

from reference.harness.lesson import run_lesson
from reference.lessons import LESSONS
from reference.variants import load_impl

REPO = Path(__file__).resolve().parents[1]
SIM = "simulation"

# lesson -> wrong fix -> (the check that must catch it, the hardened property it breaks)
GALLERY: dict[str, dict[str, tuple[str, str]]] = {
    "restart-recovery": {
        "no_peer_drop": ("story", "a dead peer's cached generations are dropped at once"),
        "fail_while_restarting": (SIM, "a request arriving during a restart waits for the new prefill"),
        "wait_without_bound": (SIM, "the wait for a prefill ends at the waiting timeout"),
        "retry_every_ms": (SIM, "waiting requests back off (doubling, jittered)"),
        "no_resend": (SIM, "a request whose prefill died before answering is resent"),
        "partition_never_invalidated": (SIM, "the waiting timeout still invalidates (no disconnect seen)"),
    },
    "room-reuse": {
        "any_status_opens": (SIM, "only Bootstrapping creates a room"),
        "failed_not_terminal": (SIM, "Failed is terminal"),
        "leftovers_kept": (SIM, "a new lifecycle clears the room's leftovers"),
        "no_lifecycle_owner": ("story", "a receiver writes only while its lifecycle owns the room"),
        "transfer_counts_early": ("story", "transfer statuses count only after the metadata"),
    },
    "failure-records": {
        "record_for_cleared": (SIM, "nothing is recorded for a cleared room"),
        "clear_keeps_record": (SIM, "clear() drops the room's failure record"),
        "clear_keeps_tracking": (SIM, "clear() drops the room's tracking"),
        "reason_after_clear": (SIM, "failure_exception() keeps the reason (read before clearing)"),
    },
    "stale-tracker": {
        "pop_any_set": ("story", "the cleanup pops only the set it holds"),
        "unlocked_identity_check": (DEEP, "the cleanup's check and pop are one locked step"),
    },
    "supervised-loops": {
        "log_no_restart": ("story", "a loop that raised runs again"),
        "restart_silently": ("story", "a restart logs the traceback"),
        "restart_without_backoff": ("restarts-back-off", "restarts back off (0.1 s doubling to 5 s)"),
        "backoff_without_cap": ("restarts-back-off", "the back-off stops doubling at 5 s"),
        "restart_after_return": ("returned-loop-stays-ended", "a loop that returns on purpose stays ended"),
        "supervise_watchdog_only": ("raised-loop-runs-again", "each of the dispatcher's loops is supervised"),
        "server_cleanup_unsupervised": ("raised-loop-runs-again", "the server's cleanup is supervised"),
        "heartbeat_unwrapped": ("raised-loop-runs-again", "the heartbeat's probe is wrapped"),
        "heartbeat_unrecorded": ("raised-probe-recorded", "a raising probe is recorded on the manager"),
    },
}


def _package(lesson_id: str) -> str:
    return f"reference.lessons.{lesson_id.replace('-', '_')}.wrong_fixes"


# Wrong fixes of the table above that no deep check catches yet (measured at SIM_BUDGET): none
# now (supervised-loops' checks find every loop by what runs; room-reuse's `leftovers_kept` is
# caught by `answers-per-lifecycle`). One added here is marked xfail(strict=True).
NOT_CAUGHT_YET: set[tuple[str, str]] = set()
# A catch counts only if the variant the wrong fix changes holds the same check
# (`reference.hardened`, at SIM_BUDGET); a lesson where it does not is listed here, and
# its hardened run marked xfail (the simulation once failed hardened on restart-recovery,
# then on room-reuse).
BASE_FAILS: dict[str, str] = {}
CASES = [
    pytest.param(
        lesson_id,
        module,
        catching,
        id=f"{lesson_id}/{module}",
        marks=[pytest.mark.lesson(id=lesson_id)]
        + (
            [pytest.mark.xfail(strict=True, reason=NOT_YET_DEEP if catching == DEEP else NOT_YET)]
            if (lesson_id, module) in NOT_CAUGHT_YET
            else []
        )
        + (  # the base fails the same check: a `bug` here would say nothing about the wrong fix
            [pytest.mark.skip(reason=BASE_FAILS[lesson_id])]
            if lesson_id in BASE_FAILS and catching in (SIM, DEEP)
            else []
        ),
    )
    for lesson_id, modules in GALLERY.items()
    for module, (catching, _property) in modules.items()
]


def test_only_deep_entries_wait_for_a_deep_check():
    for lesson_id, module in NOT_CAUGHT_YET:
        assert GALLERY[lesson_id][module][0] in (SIM, DEEP), (lesson_id, module)


@pytest.mark.parametrize(
    "lesson_id",
    [
        pytest.param(
            lesson,
            marks=[pytest.mark.lesson(id=lesson)]
            + ([pytest.mark.xfail(strict=True, reason=BASE_FAILS[lesson])] if lesson in BASE_FAILS else []),
        )
        for lesson in sorted(GALLERY)
    ],
)
def test_hardened_holds_what_catches_its_wrong_fixes(lesson_id):
    """The gallery's base, `reference.hardened`, is `ok` on the lesson with the budget the
    wrong fixes get: otherwise a wrong fix's `bug` could be hardened's own."""
    options = (
        wrong_fix_options(SIM, lesson_id)
        if any(c in (SIM, DEEP) for c, _ in GALLERY[lesson_id].values())
        else None
    )
    result = run_lesson(
        LESSONS[lesson_id], load_impl("reference.hardened"), options or wrong_fix_options("story")
    )
    failing = {c.id: c.symptom for c in result.checks if c.verdict != "ok"}
    assert result.verdict == "ok" and not failing, failing


@pytest.mark.parametrize(
    "lesson_id", [pytest.param(lesson, marks=pytest.mark.lesson(id=lesson)) for lesson in sorted(GALLERY)]
)
def test_every_gallery_module_is_listed_and_documented(lesson_id):
    package = import_module(_package(lesson_id))
    assert sorted(info.name for info in pkgutil.iter_modules(package.__path__)) == sorted(GALLERY[lesson_id])
    readme = (REPO / "reference/lessons" / lesson_id.replace("-", "_") / "README.md").read_text()
    gallery = readme.split("## Gallery: tempting wrong fixes", 1)[1]
    for module in GALLERY[lesson_id]:
        assert f"`{module}`" in gallery, module
        doc = " ".join((import_module(f"{_package(lesson_id)}.{module}").__doc__ or "").split())
        assert "Tempting" in doc and "Wrong" in doc and "Breaks hardened item" in doc, module


@pytest.mark.parametrize(("lesson_id", "module", "catching"), CASES)
def test_wrong_fix_is_caught(lesson_id, module, catching):
    options = wrong_fix_options(catching, lesson_id)
    result = run_lesson(LESSONS[lesson_id], load_impl(f"{_package(lesson_id)}.{module}"), options)
    assert_caught(result, catching)


@pytest.mark.lesson(id="supervised-loops")
@pytest.mark.parametrize(
    "module", ["reference.hardened", "reference.lessons.supervised_loops.right_fixes.restart_by_callback"]
)
def test_supervised_loops_checks_find_every_loop_by_what_runs(module):
    """The loops are found as what runs (a wrapper coroutine, or a fresh task per restart), and
    each, raising on every run, is measured backing off 0.1 s doubling to 5 s."""
    from reference.lessons.supervised_loops.checks import restarts_back_off

    result = restarts_back_off(load_impl(module).module, wrong_fix_options("story"))
    gaps = result.details["restart_gaps"]
    assert result.verdict == "ok", result.symptom
    assert sorted(gaps) == [
        "the bootstrap server.BootstrapServerBase._cleanup_expired_entries",
        "the dispatcher.DispatcherBase._cleanup_stale_mappings",
        "the dispatcher.DispatcherBase._result_listener",
        "the dispatcher.DispatcherBase._worker_watchdog",
    ]
    for seen in gaps.values():
        assert seen == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0], abs=0.01)
