"""The checks added for the semantic mutation census' gaps 13 to 16 (issue #21).

(`stale-bootstrap`'s `aborted-stays-failed` is the simulation's invariant now:
tests/test_sim_notices.py, with the same broken copy of hardened's abort.)

`restart-recovery`'s hand-built checks (`reference/lessons/restart_recovery/checks.py`):
each holds on every correct form that has the behaviour (the shipped variants that claim
it, the right fixes of the lesson) and fails on one hand-made broken copy of hardened that
undoes exactly what the check is about. Each check runs in milliseconds on the mock
transport and a virtual clock.
"""

from types import ModuleType

import pytest

import reference.fixed
import reference.hardened
from reference.harness.lesson import run_check
from reference.lessons import LESSONS, Options
from reference.lessons.restart_recovery.right_fixes import full_jitter
from reference.variants import Variant

pytestmark = pytest.mark.lesson(id="restart-recovery")

RESTART = (
    "resend-waits-for-every-rank", "late-loss-recovers", "done-loss-keeps-cache", "no-wait-at-zero-timeout",
)  # fmt: skip


class _KeepsAnswers(reference.hardened.KVReceiver):
    def _resend_after_peer_loss(self) -> None:  # the dead process's answers still counted
        kept = set(self.kv_mgr.prefill_response_tracker.get(self.bootstrap_room, ()))
        super()._resend_after_peer_loss()
        if kept:
            self.kv_mgr.prefill_response_tracker[self.bootstrap_room] |= kept


class _KeepsSendTime(reference.hardened.KVReceiver):
    def _resend_after_peer_loss(self) -> None:  # the first send's waiting timeout still runs
        sent_at = self.init_time
        super()._resend_after_peer_loss()
        self.init_time = sent_at


class _InvalidatesWhenDone(reference.hardened.KVReceiver):
    def _resend_after_peer_loss(self) -> None:  # drops its generations even when not waiting
        self.invalidate_cached_bootstrap_infos()
        super()._resend_after_peer_loss()


class _SilentSendFailure(reference.hardened.KVReceiver):
    def _fail_send(self, info: dict, exc: Exception) -> None:  # a send whose wait is up fails nothing
        pass


def _broken(receiver: type) -> ModuleType:
    module = ModuleType(f"broken_{receiver.__name__.lstrip('_').lower()}")
    for name in reference.hardened.__all__:
        setattr(module, name, getattr(reference.hardened, name))
    module.KVReceiver = receiver  # type: ignore[attr-defined]
    return module


def _verdict(lesson_id: str, check_id: str, module: ModuleType) -> tuple[str, str]:
    lesson = LESSONS[lesson_id]
    result = run_check(lesson, lesson.check(check_id), Variant(module.__name__, module, "ok"), Options())
    return result.verdict, result.symptom


@pytest.mark.parametrize("check_id", RESTART)
@pytest.mark.parametrize("module", [reference.hardened, full_jitter], ids=["hardened", "full_jitter"])
def test_restart_checks_hold_on_correct_forms(module, check_id):
    verdict, symptom = _verdict("restart-recovery", check_id, module)
    assert verdict == "ok", symptom


@pytest.mark.parametrize(
    ("check_id", "expected"),
    [("resend-waits-for-every-rank", "bug"), ("late-loss-recovers", "bug"), ("done-loss-keeps-cache", "ok"),
     ("no-wait-at-zero-timeout", "ok")],
)  # fmt: skip
def test_restart_checks_on_the_fixed_form(check_id, expected):
    """Fixed never resends (bug on the first two, as on the story); it keeps every entry; it never
    waits."""
    verdict, symptom = _verdict("restart-recovery", check_id, reference.fixed)
    assert verdict == expected, symptom


@pytest.mark.parametrize(
    ("check_id", "receiver", "said"),
    [
        ("resend-waits-for-every-rank", _KeepsAnswers, "read Success with successor ranks' transfers [0, 1]"),
        ("late-loss-recovers", _KeepsSendTime, "timed out after 300"),
        ("done-loss-keeps-cache", _InvalidatesWhenDone, "entries of the live CP rank dropped"),
        ("no-wait-at-zero-timeout", _SilentSendFailure, "it waits although no wait is allowed"),
    ],
)
def test_restart_checks_fail_on_a_broken_copy(check_id, receiver, said):
    for other in RESTART:  # each broken copy breaks its own check only
        verdict, symptom = _verdict("restart-recovery", other, _broken(receiver))
        assert verdict == ("bug" if other == check_id else "ok"), (other, symptom)
        if other == check_id:
            assert said in symptom, symptom
