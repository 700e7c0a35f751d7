"""The notebook helpers in `reference.teaching` (all but the plots)."""

import pytest

import reference.buggy
import reference.fixed
from reference.lessons.failed_resurrect import teaching as resurrect
from reference.lessons.live_set_race import teaching as live_set
from reference.lessons.stale_bootstrap import teaching as stale
from reference.lessons.task_refs import teaching as tasks
from reference.teaching import diffs, exercises, runs, sequences, tour


def test_lesson_diff_is_the_tagged_hunk_of_the_real_files():
    text = diffs.fix_diff("live-set-race").text()
    assert text.startswith("--- reference/buggy/manager.py\n+++ reference/fixed/manager.py\n@@ ")
    removed = [line for line in text.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in text.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert len(removed) == 1 and "BUG(live-set-race)" in removed[0]
    assert len(added) == 1 and "list(self.addr_to_rooms_tracker" in added[0]
    assert "failed-resurrect" not in text


def test_whole_diff_covers_every_lesson_in_the_variants():
    lessons = set().union(*(hunk.lessons for hunk in diffs.fix_diff().hunks))
    assert {"failed-resurrect", "live-set-race"} <= lessons


def test_diff_of_made_up_files_filters_and_escapes(tmp_path):
    for side, line in (
        ("buggy", "x = a < b  # BUG(task-refs): old"),
        ("fixed", "x = b  # FIX(task-refs): new"),
    ):
        (tmp_path / side).mkdir()
        (tmp_path / side / "mod.py").write_text(f"keep\n{line}\nkeep\n")
        (tmp_path / side / "__init__.py").write_text("")
    diff = diffs.fix_diff("task-refs", root=tmp_path)
    assert diff.files == ["mod.py"]
    assert "&lt; b" in diff._repr_html_()
    with pytest.raises(ValueError, match=r"no hunk .* tagged 'stale-bootstrap'"):
        diffs.fix_diff("stale-bootstrap", root=tmp_path)


def test_runs_print_the_scenario_verdicts():
    results = runs.run_all("failed-resurrect")
    table = runs.verdict_table(results)
    assert [r.verdict for r in results] == ["bug", "ok"]
    assert " buggy: BUG     (as expected) 8 of 8 cleared rooms came back" in table
    with pytest.raises(ValueError, match="unknown lesson"):
        runs.run("no-such-lesson")
    with pytest.raises(ValueError, match="unknown variant"):
        runs.run("failed-resurrect", "hardened-someday")


@pytest.mark.parametrize("lesson", sorted(sequences.LESSONS_DRAWN))
def test_each_interleaving_marks_the_bug_and_the_fix(lesson):
    kinds = {v: {s.kind for s in sequences.interleaving(lesson, v).steps} for v in ("buggy", "fixed")}
    assert {"bug", "error"} <= kinds["buggy"] and "fix" not in kinds["buggy"]
    assert "fix" in kinds["fixed"] and not {"bug", "error"} & kinds["fixed"]


def test_sequence_rejects_unknown_actor():
    with pytest.raises(ValueError, match="not in"):
        sequences.Sequence("t", ("a",), (sequences.Step("a", "b", "x"),))
    with pytest.raises(ValueError, match="no interleaving"):
        sequences.interleaving("no-such-lesson", "buggy")


def test_check_choice_answers_never_raise():
    args = ("a", ("a", "b"), "because", "think", "ran it")
    assert exercises.check_choice(None, *args).status == "unanswered"
    assert exercises.check_choice("zz", *args).status == "wrong"
    wrong = exercises.check_choice("b", *args)
    assert wrong.status == "wrong" and "Hint: think" in str(wrong) and "ran it" not in str(wrong)
    right = exercises.check_choice(" (A) ", *args)
    assert right.correct and "ran it" in repr(right)


@pytest.mark.lesson(id="failed-resurrect")
def test_reused_room_is_polluted_only_when_the_abort_lands_after_it_opens():
    for variant in (reference.buggy, reference.fixed):
        assert resurrect.reused_room(variant, "abort-before-open").new_request_reads == "Bootstrapping"
        assert resurrect.reused_room(variant, "abort-after-open").new_request_reads == "Failed"
        assert resurrect.failed_then_lifted(variant) == "Transferring"
    with pytest.raises(ValueError, match="order must be"):
        resurrect.reused_room(reference.fixed, "sideways")


@pytest.mark.lesson(id="failed-resurrect")
def test_resurrect_exercise_checker():
    assert resurrect.check_exercise("a").correct
    assert resurrect.check_exercise("b").status == "wrong"
    assert resurrect.check_exercise(None).status == "unanswered"


@pytest.mark.lesson(id="live-set-race")
def test_by_hand_the_buggy_handler_raises_and_the_fixed_fails_every_room():
    buggy, fixed = live_set.by_hand(reference.buggy), live_set.by_hand(reference.fixed)
    assert buggy.error == "RuntimeError: Set changed size during iteration"
    assert [buggy.statuses[r] for r in (1, 2, 3)].count("Failed") == 1
    assert fixed.error is None
    assert [fixed.statuses[r] for r in (1, 2, 3)] == ["Failed"] * 3


@pytest.mark.lesson(id="live-set-race")
@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_reindexing_is_safe_and_a_stale_pop_loses_the_new_room(variant):
    reindexed = live_set.reindex_mid_failure(variant)
    assert reindexed.error is None and reindexed.statuses[9] == "Bootstrapping" and reindexed.tracked == [9]
    stale = live_set.stale_pop(variant)
    assert stale.error is None and stale.tracked == [] and stale.statuses[9] == "WaitingForInput"


@pytest.mark.lesson(id="live-set-race")
def test_live_set_exercise_checker():
    assert live_set.check_exercise("b").correct
    assert live_set.check_exercise("a").status == "wrong"


@pytest.mark.lesson(id="stale-bootstrap")
def test_replacement_race_keeps_the_new_generation_only_by_identity():
    buggy, fixed, by_key = (
        stale.replacement_race(v) for v in (reference.buggy, reference.fixed, stale.BY_KEY)
    )
    assert not buggy.third_uses_new_ports and buggy.fourth == "Failed"
    assert fixed.survived and fixed.fourth_fetches == 0 and fixed.fourth == "Success"
    assert not by_key.survived and by_key.fourth_fetches == 1 and by_key.fourth == "Success"
    assert stale.check_exercise("b").correct and stale.check_exercise("a").status == "wrong"


@pytest.mark.lesson(id="stale-bootstrap")
def test_stale_sockets_and_slow_prefill_in_both_forms():
    fixed = stale.stale_sockets(reference.fixed, restarts=2)
    assert "2 prefill restarts" in fixed and "Success | Failed Success | Failed Success" in fixed
    assert fixed.count("tcp://") == 2 and "one per earlier generation it reached" in fixed
    buggy = stale.stale_sockets(reference.buggy, restarts=2)
    assert "Success | Failed Failed | Failed Failed" in buggy and "never reached a restarted prefill" in buggy
    assert "extra /route fetches 2" in stale.slow_prefill(reference.fixed)
    assert "extra /route fetches 0" in stale.slow_prefill(reference.buggy)


@pytest.mark.lesson(id="task-refs")
def test_tasks_exercise_measures_both_awaits():
    assert tasks.check_exercise("a").correct
    assert tasks.check_exercise("d").status == "wrong"
    assert "Task exception was never retrieved" in tasks.swallowed(reference.fixed)


def test_tour_walks_one_request_and_records_its_messages():
    walk = tour.Tour()
    try:
        steps = [
            walk.start_prefill(),
            walk.start_decode(),
            walk.fetch_parallel_info(),
            walk.start_heartbeat(),
        ]
        steps += [walk.open_request(), walk.init_receiver(), walk.send_metadata(), walk.poll(), walk.clear()]
    finally:
        walk.close()
    assert "receiver for room 42: Bootstrapping" in steps[4]
    assert steps[5].startswith("init: WaitingForInput")
    assert steps[7] == "poll -> Success; KV bytes are exactly what each prefill rank sent: True"
    labels = [(s.source, s.target, s.label) for s in walk.sequence().steps]
    assert ("heartbeat", "bootstrap server", "GET /health -> 200") in labels
    assert ("decode receiver", "prefill rank 1", "REGISTER") in labels
    assert ("prefill rank 0", "decode memory", "KV page (memcpy) x4") in labels
    assert ("prefill rank 1", "decode inbox", "STATUS room 42: Success") in labels


async def test_lessons_run_from_inside_a_running_loop_as_in_jupyter():
    """Jupyter cells run inside an asyncio loop; a scenario with its own loop moves to a thread."""
    result = runs.run("task-refs", "fixed")
    assert result.verdict == "ok", result.symptom
    with pytest.raises(ZeroDivisionError):
        runs.outside_event_loop(lambda: 1 / 0)


def test_tour_topology_has_an_arrow_for_every_step_that_sends_a_message():
    import re

    from reference.teaching.tour import TOPOLOGY

    numbered = {int(n) for edge in TOPOLOGY.edges for n in re.findall(r"(\d+)\. ", edge.label)}
    assert numbered == {1, 3, 4, 5, 6, 7, 8, 9}, "step 2 (the decode starting) sends nothing"
    pairs = {(e.source.split("\n")[0], e.target.split("\n")[0]) for e in TOPOLOGY.edges}
    assert ("KVManager", "bootstrap server") in pairs, "step 3: the manager fetches every rank's route"
