"""The two residual lessons found on netns: on the mock (quick tier) buggy and fixed show
the symptom and hardened holds, for what was observed (bytes, statuses, held pages); on
netns (the netns tier) the same verdicts from the real faults, read from their histories."""

import pytest

from reference.lessons import LESSONS, Options, run_lesson
from reference.netns import ns
from reference.variants import shipped


def run(lesson: str, variant: str):
    return run_lesson(LESSONS[lesson], shipped(variant), Options())


@pytest.mark.lesson(id="late-kv-write")
def test_late_kv_write():
    for variant in ("buggy", "fixed"):
        result = run("late-kv-write", variant)
        assert result.verdict == "bug", result.symptom
        d = result.details
        assert d["a_final"] == "Failed" and d["b_bytes_ok_at_success"] and not d["b_bytes_ok_after"]
        assert d["shared_pages"] == d["a_pages"] == d["b_pages"]
        assert "overwrote B's KV" in result.symptom
    hardened = run("late-kv-write", "hardened")
    assert hardened.verdict == "ok", hardened.symptom
    d = hardened.details
    assert d["in_doubt_when_b_allocated"] == d["a_pages"] and not d["shared_pages"]
    assert d["b_bytes_ok_after"] and d["in_doubt_at_end"] == []


@pytest.mark.lesson(id="late-kv-write")
def test_held_pages_are_released_only_by_the_missing_answers():
    import reference.hardened
    from reference.lessons.stale_bootstrap.world import TP_SIZE, open_world
    from reference.status import KVPoll

    with open_world(reference.hardened, "mock") as world:
        world.start()
        receiver = reference.hardened.KVReceiver(world.manager, world.addr, 5)
        receiver.init(0)
        receiver.send_metadata([8, 9])
        world.pump()
        assert receiver.poll() == KVPoll.Success
        receiver.clear()  # every rank answered: nothing held
        assert world.manager.pages_in_doubt() == set()
        world.manager.hold_pages(6, [1, 2], TP_SIZE)
        assert world.manager.pages_in_doubt() == {1, 2}
        assert not world.manager.accepts_transfer_status(6)  # one late answer of two
        assert world.manager.pages_in_doubt() == {1, 2}
        assert not world.manager.accepts_transfer_status(6)
        assert world.manager.pages_in_doubt() == set()


@pytest.mark.lesson(id="bootstrap-partition")
def test_bootstrap_partition():
    for variant in ("buggy", "fixed"):
        result = run("bootstrap-partition", variant)
        assert result.verdict == "bug", result.symptom
        d = result.details
        assert d["short_requests"] == ["Success", "Success"] and d["heartbeat_misses"] == 2
        assert d["a_final"] == "Failed" and d["a_failure"].startswith("Lost connection with prefill instance")
    hardened = run("bootstrap-partition", "hardened")
    assert hardened.verdict == "ok", hardened.symptom
    d = hardened.details
    assert d["heartbeat_misses"] == 2 and d["a_final"] == "Success" and d["a_bytes_ok"]


@pytest.mark.lesson(id="bootstrap-partition")
def test_hardened_still_declares_a_silent_prefill_dead():
    """No status from its ranks within the window: two misses fail its rooms, as upstream."""
    import reference.hardened
    from reference import wire
    from reference.lessons.stale_bootstrap.world import TP_SIZE, open_world
    from reference.status import KVPoll

    with open_world(reference.hardened, "mock") as world:
        world.start()
        world.transport.delay(60.0, count=TP_SIZE, tag=wire.STATUS)  # nothing comes back
        receiver = reference.hardened.KVReceiver(world.manager, world.addr, 9)
        receiver.init(0)
        receiver.send_metadata(world._pages())
        world.transport.kill(world.addr)
        world.tick()
        world.tick()
        assert receiver.poll() == KVPoll.Failed
        assert world.manager.failure_records[9].startswith("Lost connection with prefill instance")
        receiver.clear()


@pytest.mark.netns
@pytest.mark.skipif(bool(ns.unavailable()), reason=ns.unavailable())
@pytest.mark.parametrize(
    ("lesson", "variant", "verdict"),
    [
        ("bootstrap-partition", "fixed", "bug"),
        ("bootstrap-partition", "hardened", "ok"),
        ("late-kv-write", "fixed", "bug"),
        ("late-kv-write", "hardened", "ok"),
    ],
)
def test_the_residuals_on_netns(lesson, variant, verdict):
    result = run_lesson(LESSONS[lesson], shipped(variant), Options(transport="netns"))
    assert result.verdict == verdict, result.symptom
    d = result.details
    assert d["fault"] in ("bootstrap", "pause") and d["lost"] == [] and d["teardown_s"] > 0
    if lesson == "bootstrap-partition":
        failed = list(d["failed"].values())
        assert (verdict == "bug") == any("Could not fetch prefill parallel info" in why for why in failed)
    else:
        assert d["late_written_rooms"], "the resumed prefill wrote a failed room's pages"
        assert (verdict == "bug") == bool(d["late_written_while_freed"])
        assert (verdict == "ok") == bool(d["pages_held_at_heal"])
