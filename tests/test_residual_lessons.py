"""The residual lessons (holes upstream's four fixes leave open): buggy and fixed show the
specific symptom, hardened holds; the verdict table expects exactly that."""

import threading
import types

import pytest

import reference.hardened
from reference.harness.lesson import run_check
from reference.lessons import LESSONS, Options, run_lesson
from reference.variants import RESIDUAL_LESSON_IDS, Variant, shipped


def run(lesson: str, variant: str, **options):
    return run_lesson(LESSONS[lesson], shipped(variant), Options(**options))


@pytest.mark.lesson(id="restart-recovery")
@pytest.mark.parametrize(
    ("sockets", "path"),
    [("upstream", "queued silently, failed on the waiting timeout"), ("fail-fast", "the send failed")],
)
def test_restart_recovery_on_the_mock(sockets, path):
    buggy, fixed, hardened = (
        run("restart-recovery", v, sockets=sockets) for v in ("buggy", "fixed", "hardened")
    )
    assert buggy.verdict == "bug" and buggy.symptom.startswith("5 of 5 requests issued after the new prefill")
    assert fixed.verdict == "bug" and fixed.symptom.startswith("1 of 5 requests issued after the new prefill")
    assert path in fixed.symptom and fixed.details["stale_ports"] == fixed.details["old_ports"]
    assert hardened.verdict == "ok", hardened.symptom
    assert hardened.details["failed_after_registration"] == 0
    assert hardened.details["first_success_after_registration_ms"] == 0.0  # virtual time
    assert hardened.details["bytes_verified"] == 5 and hardened.details["peers_gone_seen"] == 2
    if sockets == "upstream":
        assert fixed.details["first_success_after_registration_ms"] == 300_000.0, "the waiting timeout"


@pytest.mark.loopback
@pytest.mark.lesson(id="restart-recovery")
def test_restart_recovery_on_loopback():
    fixed = run("restart-recovery", "fixed", transport="loopback")
    hardened = run("restart-recovery", "hardened", transport="loopback")
    assert fixed.verdict == "bug" and "shortened from upstream's 300 s" in fixed.symptom
    assert fixed.details["failed_after_registration"] == 1
    assert hardened.verdict == "ok", hardened.symptom
    assert hardened.details["failed_after_registration"] == 0 and hardened.details["bytes_verified"] == 5
    assert hardened.details["peers_gone_seen"] == 2, "the decode saw both old ranks' connections close"


@pytest.mark.lesson(id="room-reuse")
def test_room_reuse():
    for variant in ("buggy", "fixed"):
        result = run("room-reuse", variant)
        assert result.verdict == "bug"
        assert "a late abort of the room's previous request turned the new one Failed" in result.symptom
        assert "made the new one Success before it had sent its metadata" in result.symptom
        assert result.details["failure_record"] == "Aborted by AbortReq."
    hardened = run("room-reuse", "hardened")
    assert hardened.verdict == "ok", hardened.symptom
    d = hardened.details
    assert (d["opened"], d["after_late_abort"], d["after_late_statuses"], d["final"]) == (
        "WaitingForInput", "WaitingForInput", "WaitingForInput", "Success"
    )  # fmt: skip
    assert d["bytes_ok"] and d["failure_record"] is None


@pytest.mark.lesson(id="failure-records")
def test_failure_records():
    buggy, fixed, hardened = (run("failure-records", v) for v in ("buggy", "fixed", "hardened"))
    assert buggy.verdict == "bug" and buggy.details["sizes"]["request_status"] == 400
    assert fixed.verdict == "bug" and "failure_records 400" in fixed.symptom
    assert {k: v for k, v in fixed.details["sizes"].items() if v} == {"failure_records": 400}
    assert hardened.verdict == "ok" and not any(hardened.details["sizes"].values())


@pytest.mark.lesson(id="stale-tracker")
def test_stale_tracker():
    for variant in ("buggy", "fixed"):
        result = run("stale-tracker", variant)
        assert result.verdict == "bug"
        assert "emptied and popped the new prefill's tracker set" in result.symptom
        assert result.details["new_after_second_failure"] == "WaitingForInput"
        assert result.details["thread_errors"] == ""
    hardened = run("stale-tracker", "hardened")
    assert hardened.verdict == "ok" and hardened.details["new_after_second_failure"] == "Failed"


@pytest.mark.lesson(id="supervised-loops")
def test_supervised_loops():
    for variant in ("buggy", "fixed"):
        result = run("supervised-loops", variant)
        assert result.verdict == "bug"
        assert "loops 3 -> 2" in result.symptom and "no traceback logged" in result.symptom
        assert "Task exception was never retrieved" in result.symptom
        assert result.details["routed_to_dead"] == 2
    hardened = run("supervised-loops", "hardened")
    assert hardened.verdict == "ok", hardened.symptom
    assert hardened.details["logged"] and hardened.details["death_noticed"]
    assert hardened.details["loops_after"] == hardened.details["loops_before"]


def test_expectations_per_variant():
    for lesson in RESIDUAL_LESSON_IDS:
        assert shipped("buggy").expected_for(lesson) == "bug"
        assert shipped("fixed").expected_for(lesson) == "bug"
        assert shipped("hardened").expected_for(lesson) == "ok"
    assert shipped("fixed").expected_for("stale-bootstrap") == "ok"


@pytest.mark.lesson(id="restart-recovery")
def test_hardened_resends_a_request_caught_by_the_kill_to_the_new_prefill():
    """Metadata sent, the answers held up, the prefill dies and a new one registers: the
    hardened receiver resends the same pages to the new ranks on its next poll."""
    import reference.hardened
    from reference import wire
    from reference.lessons.stale_bootstrap.world import TP_SIZE, open_world
    from reference.status import KVPoll

    with open_world(reference.hardened, "mock") as world:
        world.start()
        world.transport.delay(60.0, count=TP_SIZE, tag=wire.STATUS)  # the old ranks' answers never come
        receiver = reference.hardened.KVReceiver(world.manager, world.addr, 7)
        receiver.init(0)
        pages = world._pages()
        receiver.send_metadata(pages)
        old = list(world.prefill.rank_ports)
        world.prefill.restart()
        assert receiver.lost_peer, "the manager flagged the request waiting on the dead ranks"
        assert receiver.poll() == KVPoll.Success
        ports = [int(info["rank_port"]) for info in receiver.bootstrap_infos]
        assert ports == world.prefill.rank_ports and not set(ports) & set(old)
        assert world._bytes_ok(7, receiver.bootstrap_infos, pages)
        receiver.clear()


@pytest.mark.lesson(id="restart-recovery")
def test_hardened_backs_off_while_no_prefill_answers_and_finds_the_new_one():
    """A request waiting for a missing prefill must not crowd it while it restarts (retries
    every millisecond slowed the new prefill's registration in the recovery benchmark): its
    route fetches back off (at most 50 in a second of waiting, against 1,000 before), and the
    new prefill is still found within 50 ms of registering."""
    import reference.hardened
    from reference.lessons.stale_bootstrap.world import open_world
    from reference.status import KVPoll

    with open_world(reference.hardened, "mock") as world:
        world.start()
        world.prefill.kill()
        receiver = reference.hardened.KVReceiver(world.manager, world.addr, 7)
        receiver.init(0)
        receiver.send_metadata(world._pages())
        fetches = world.transport.route_fetches
        for _ in range(1000):  # one second of polls, one a millisecond
            world.clock.advance(0.001)
            assert receiver.poll() == KVPoll.WaitingForInput
        fetched = world.transport.route_fetches - fetches
        assert fetched <= 50, f"{fetched} route fetches in one second of waiting"
        world.prefill.start()
        waited = 0
        while receiver.poll() != KVPoll.Success and waited < 1000:
            world.clock.advance(0.001)
            world.pump()
            waited += 1
        assert waited <= 50, f"the new prefill found {waited} ms after it registered"
        receiver.clear()


@pytest.mark.lesson(id="restart-recovery")
def test_hardened_requests_that_lost_the_prefill_together_do_not_retry_in_step():
    """Requests that started waiting at the same instant must spread their retries (jitter);
    in step, the first success after the registration waits for their common next retry."""
    import reference.hardened
    from reference.lessons.stale_bootstrap.world import open_world

    with open_world(reference.hardened, "mock") as world:
        world.start()
        world.prefill.kill()
        receivers = [reference.hardened.KVReceiver(world.manager, world.addr, room) for room in (7, 8)]
        fetched_at: list[set[int]] = [set(), set()]
        for receiver in receivers:
            receiver.init(0)
        for ms in range(1, 1000):
            world.clock.advance(0.001)
            for receiver, times in zip(receivers, fetched_at, strict=True):
                before = world.transport.route_fetches
                receiver.poll()
                if world.transport.route_fetches > before and ms >= 100:  # backed off by now
                    times.add(ms)
        together = fetched_at[0] & fetched_at[1]
        assert len(fetched_at[0]) >= 10 and len(together) <= 3, f"{len(together)} retries in step"
        for receiver in receivers:
            receiver.clear()


class _ReleasesAtFirstAnswer(reference.hardened.KVManager):
    """A hold let go at the first late answer, not the last (the story cannot tell)."""

    def _answer_for_held_pages(self, room: int) -> bool:
        if room not in self.held_pages or room in self.awaiting_transfer:
            return False
        with self._held_lock:
            self.held_pages.pop(room, None)
        return True


class _CountsDownWithGet(reference.hardened.KVManager):
    """A correct hold written differently: a re-entrant lock, one locked `get`-then-store."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._held_lock = threading.RLock()

    def _answer_for_held_pages(self, room: int) -> bool:
        if room in self.awaiting_transfer:
            return False
        with self._held_lock:
            entry = self.held_pages.get(room)
            if entry is not None and entry[1] > 1:
                self.held_pages[room] = (entry[0], entry[1] - 1, entry[2])
            elif entry is not None:
                del self.held_pages[room]
        return entry is not None


def _with_manager(manager: type) -> Variant:
    module = types.ModuleType(f"hardened_{manager.__name__}")
    vars(module).update({k: getattr(reference.hardened, k) for k in reference.hardened.__all__})
    module.KVManager = manager  # type: ignore[attr-defined]
    return Variant(module.__name__, module, "ok")


@pytest.mark.lesson(id="late-kv-write")
def test_late_kv_write_ranks_resuming_apart():
    check = LESSONS["late-kv-write"].check("ranks-resume-apart")
    for variant in ("buggy", "fixed"):
        seen = run_check(LESSONS["late-kv-write"], check, shipped(variant), Options())
        assert seen.verdict == "bug" and "overwrote C's KV after C's Success" in seen.symptom, variant
    assert run_check(LESSONS["late-kv-write"], check, shipped("hardened"), Options()).verdict == "ok"
    right = run_lesson(LESSONS["late-kv-write"], _with_manager(_CountsDownWithGet), Options())
    assert right.verdict == "ok", right.symptom
    wrong = run_lesson(LESSONS["late-kv-write"], _with_manager(_ReleasesAtFirstAnswer), Options())
    assert wrong.verdict == "bug" and "ranks-resume-apart" in wrong.symptom, wrong.symptom
