"""`check_fix` says whether the learner's own methods ran during the checks, and how often.

A fix that is never called (a misspelled name) and one that runs without effect both leave
the verdict at BUG; the report tells them apart. Counted on the stale-bootstrap exercise: an
invalidation that drops nothing, one under a name nobody calls, and the class restored after.
"""

import reference.fixed
from reference.teaching import calls, exercises


class Ineffective(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:  # as notebook 03 commits it
        self._connection_pool_entries.clear()


class Misspelled(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_info(self) -> None:
        raise AssertionError("never called")


def test_an_ineffective_fix_is_reported_as_run_and_still_failing():
    original = Ineffective.__dict__["invalidate_cached_bootstrap_infos"]
    report = exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": Ineffective}))
    assert report.verdict == "bug"
    assert report.calls["KVReceiver.invalidate_cached_bootstrap_infos"] > 0
    text = str(report)
    assert "Your code ran during the checks: KVReceiver.invalidate_cached_bootstrap_infos " in text
    assert "It ran, and the checks above still saw the bug." in text
    assert Ineffective.__dict__["invalidate_cached_bootstrap_infos"] is original, "the class is restored"


def test_a_method_nobody_calls_is_named():
    report = exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": Misspelled}))
    assert report.calls == {"KVReceiver.invalidate_cached_bootstrap_info": 0}
    assert "Never called during the checks: KVReceiver.invalidate_cached_bootstrap_info" in str(report)


def test_summary_of_a_passing_fix_says_only_what_ran():
    assert calls.summary({"KVManager.update_status": 3}, "ok") == [
        "Your code ran during the checks: KVManager.update_status 3 times"
    ]


def test_a_shipped_class_passed_along_is_not_counted_as_the_learners():
    variant = exercises.variant_from(
        {"KVReceiver": Ineffective, "BootstrapServer": reference.fixed.BootstrapServer}
    )
    report = exercises.check_fix("stale-bootstrap", variant)
    assert set(report.calls) == {"KVReceiver.invalidate_cached_bootstrap_infos"}
