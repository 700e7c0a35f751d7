"""`check_fix` says whether the learner's own methods ran during the checks, and how often.

A fix that is never called (a misspelled name) and one that runs without effect both leave
the verdict at BUG; the report tells them apart. Counted on the stale-bootstrap exercise: an
invalidation that drops nothing, one under a name nobody calls, and the class restored after.
"""

import re

import reference.fixed
from reference.teaching import calls, exercises


class Ineffective(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:  # as notebook 03 commits it
        self._connection_pool_entries.clear()


class DropsNothing(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:  # looks, matches no entry, drops nothing
        for key, infos in self._connection_pool_entries.items():
            if self.kv_mgr.connection_pool.get(key) is infos and infos is None:
                del self.kv_mgr.connection_pool[key]


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
    calls_made = report.calls["KVReceiver.invalidate_cached_bootstrap_infos"]
    said = re.escape(
        "What KVReceiver.invalidate_cached_bootstrap_infos changed: self._connection_pool_entries"
    )
    pattern = rf"{said} \(in (\d+) of {calls_made} calls\); no other attribute of self or self\.kv_mgr\."
    seen = re.search(pattern, " ".join(text.split()))
    assert seen and int(seen[1]) > 0, (
        "it names what the fix changed, and that the pool (on self.kv_mgr) was not"
    )
    assert Ineffective.__dict__["invalidate_cached_bootstrap_infos"] is original, "the class is restored"


def test_a_fix_that_ran_and_changed_nothing_says_so():
    report = exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": DropsNothing}))
    committed = exercises.check_fix("stale-bootstrap", exercises.variant_from({"KVReceiver": Ineffective}))
    assert report.verdict == "bug" and report.changes == {"KVReceiver.invalidate_cached_bootstrap_infos": {}}
    text = " ".join(str(report).split())
    assert (
        "What KVReceiver.invalidate_cached_bootstrap_infos changed: nothing. No attribute of self or" in text
    )
    assert "changed: nothing" not in " ".join(str(committed).split()), (
        "it reads differently from the exercise"
    )


def test_a_right_fix_reports_no_effects_and_no_bug_line():
    lines = calls.summary({"KVManager.update_status": 3}, "ok", {"KVManager.update_status": {}}, {})
    assert lines == ["Your code ran during the checks: KVManager.update_status 3 times"]


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
