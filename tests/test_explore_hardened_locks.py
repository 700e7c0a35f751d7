"""The explorations of hardened's locked steps (reference/explore: late_kv_write.py,
failure_records.py, restart_recovery.py and stale_tracker.py's `clear-keeps-reused-room`,
`late-cleanup-keeps-reused-room` and `cleanup-untracks-finished-room`).

Each property holds on hardened (exhaustively or within its bound) and is `bug` on a
hand-made copy of hardened's manager with the one step the property guards done the
tempting way: a read-modify-write split from its lock, a store without it, a check split
from its store, the expired holds not let go of first, a deletion without the lock, a pop
moved before it, the cleanup's first step unlocked, the acceptance read before the held
check, a cleanup that only forgets the room's address, the waiting requests marked before
the dead generations leave the pool; where the lesson has a right fix, it holds too. Run in
process through the default run's entry (`deep.explore_within`), with a bound share; a
variant without the method a property needs is `unknown`.
"""

import types

import pytest

import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.variants import load_impl, shipped

SHARE = 20.0  # seconds; each search ends in well under a second here, the bound only caps a hang


class SplitCountDown(reference.hardened.KVManager):
    def _answer_for_held_pages(self, room: int) -> bool:
        if room not in self.held_pages or room in self.awaiting_transfer:
            return False
        pages, due, until = self.held_pages[room]  # the mistake: read outside the lock
        with self._held_lock:
            if due <= 1:
                self.held_pages.pop(room, None)
            else:
                self.held_pages[room] = (pages, due - 1, until)
        return True


class KeepsExpired(reference.hardened.KVManager):
    def pages_in_doubt(self) -> set[int]:
        with self._held_lock:  # the mistake: no release of the holds past HOLD_FOR first
            return {page for pages, _, _ in self.held_pages.values() for page in pages}


class UnlockedHold(reference.hardened.KVManager):
    def hold_pages(self, room: int, pages: list[int], due: int) -> None:
        self.held_pages[room] = (list(pages), due, self.clock.now() + 600.0)  # the mistake: no lock


class SplitGuard(reference.hardened.KVManager):
    def record_failure(self, bootstrap_room: int, reason: str) -> None:
        if bootstrap_room in self.request_status:  # the mistake: checked, then stored later
            with self.failure_lock:
                self.failure_records[bootstrap_room] = reason


class _PeerGoneUnlocked(reference.hardened.KVManager):
    """`_on_peer_gone` deletes the dead generation without `connection_lock`."""

    def _on_peer_gone(self, endpoint: str) -> None:
        for key, infos in list(self.connection_pool.items()):
            if any(f"tcp://{i.get('rank_ip')}:{i.get('rank_port')}" == endpoint for i in infos):
                del self.connection_pool[key]
        for receiver in list(self.receivers.values()):
            if receiver.sent_to(endpoint):
                receiver.lost_peer = True


class _ClearPopsFirst(reference.hardened.KVManager):
    """`clear` pops the room's address before it takes the lock to look its set up."""

    def clear(self, bootstrap_room: int) -> None:
        self.request_status.pop(bootstrap_room, None)
        self.receivers.pop(bootstrap_room, None)
        self.room_lifecycle.pop(bootstrap_room, None)
        self.awaiting_transfer.discard(bootstrap_room)
        self.answers.pop(bootstrap_room, None)
        with self.failure_lock:
            self.failure_records.pop(bootstrap_room, None)
        addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
        with self.connection_lock:
            rooms = self.addr_to_rooms_tracker.get(addr) if addr is not None else None
            if rooms is not None:
                rooms.discard(bootstrap_room)


class _CleanupFirstStepUnlocked(reference.hardened.KVManager):
    """`_cleanup_room_tracking` takes the address and its set without the lock."""

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)  # the mistake: no lock here
        if addr is None:
            return
        rooms = self.addr_to_rooms_tracker.get(addr)
        with self.connection_lock:
            if rooms is None or self.addr_to_rooms_tracker.get(addr) is not rooms:
                return
            rooms.discard(bootstrap_room)
            if not rooms:
                self.addr_to_rooms_tracker.pop(addr, None)


class _MarksBeforeDrop(reference.hardened.KVManager):
    """`_on_peer_gone` marks the requests that sent to the dead rank, then drops its generations."""

    def _on_peer_gone(self, endpoint: str) -> None:
        for receiver in list(self.receivers.values()):  # the mistake: before the pool is clean
            if receiver.sent_to(endpoint):
                receiver.lost_peer = True
        with self.connection_lock:
            for key, infos in list(self.connection_pool.items()):
                if any(f"tcp://{i.get('rank_ip')}:{i.get('rank_port')}" == endpoint for i in infos):
                    del self.connection_pool[key]


class _AcceptanceReadFirst(reference.hardened.KVManager):
    """`accepts_transfer_status` reads the room's acceptance before the held-pages check."""

    def accepts_transfer_status(self, bootstrap_room: int) -> bool:
        self._release_expired_pages()
        accepted = bootstrap_room in self.awaiting_transfer and bootstrap_room in self.request_status
        if self._answer_for_held_pages(bootstrap_room):  # the mistake: a reopen between is missed
            return False
        if accepted:
            self.answers[bootstrap_room] = self.answers.get(bootstrap_room, 0) + 1
        return accepted


class _CleanupOnlyForgets(reference.hardened.KVManager):
    """`_cleanup_room_tracking` pops the room's address and stops: the room stays in its set."""

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        with self.connection_lock:
            self.room_to_bootstrap_addr.pop(bootstrap_room, None)  # the mistake: no discard after it


def _variant(manager: type) -> types.ModuleType:
    module = types.ModuleType(f"broken_{manager.__name__}")
    module.KVManager = manager  # type: ignore[attr-defined]
    module.KVReceiver = reference.hardened.KVReceiver  # type: ignore[attr-defined]
    return module


def _prop(lesson: str, prop_id: str):
    (prop,) = [p for p in PROPERTIES[lesson] if p.id == prop_id]
    return prop


RIGHT = "reference/lessons/{}/right_fixes/{}.py"
CASES = [
    ("late-kv-write", "late-answers-release-held", SplitCountDown, "still in doubt", None),
    ("late-kv-write", "late-answer-vs-reopen", _AcceptanceReadFirst, "counted nowhere", None),
    ("stale-tracker", "cleanup-untracks-finished-room", _CleanupOnlyForgets,
     "cleaned up and cleared, is still tracked", RIGHT.format("stale_tracker", "discard_only")),
    ("late-kv-write", "hold-during-allocation", KeepsExpired, "passed HOLD_FOR", None),
    ("late-kv-write", "hold-during-allocation", UnlockedHold, "dictionary changed size", None),
    ("failure-records", "no-record-after-clear", SplitGuard, "keeps a failure record", None),
    ("restart-recovery", "peer-gone-vs-invalidation", _PeerGoneUnlocked, "KeyError", None),
    ("stale-tracker", "clear-keeps-reused-room", _ClearPopsFirst, "tracked nowhere", None),
    ("stale-tracker", "late-cleanup-keeps-reused-room", _CleanupFirstStepUnlocked,
     "reused by a new request, is tracked nowhere", RIGHT.format("stale_tracker", "discard_only")),
    ("restart-recovery", "resend-avoids-dead-peer", _MarksBeforeDrop,
     "a resend after the peer loss went to the dead rank", RIGHT.format("restart_recovery", "full_jitter")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("lesson", "prop_id", "broken", "symptom", "right"), CASES, ids=[f"{c[1]}-{c[2].__name__}" for c in CASES]
)
def test_holds_on_hardened_and_finds_the_broken_copy(lesson, prop_id, broken, symptom, right):
    prop = _prop(lesson, prop_id)
    for module in (reference.hardened, *([load_impl(right).module] if right else [])):
        held = deep.explore_within(prop, module, SHARE)
        assert held.verdict == "ok", (module.__name__, held.symptom)
        assert prop.bound is not None or "(exhaustive)" in held.symptom, held.symptom
    found = deep.explore_within(prop, _variant(broken), SHARE)
    assert found.verdict == "bug", found.symptom
    assert symptom in found.symptom and found.schedule


@pytest.mark.parametrize("lesson", ["late-kv-write", "failure-records", "stale-tracker", "restart-recovery"])
def test_registered_as_deep_checks_of_their_lessons(lesson):
    from reference.lessons import LESSONS

    ids = {c.id for c in LESSONS[lesson].checks if c.id.startswith(deep.PREFIX)}
    assert ids == {deep.PREFIX + p.id for p in PROPERTIES[lesson]}, lesson


def test_peer_loss_property_is_not_judged_without_the_callback():
    finding = deep.explore_within(
        _prop("restart-recovery", "peer-gone-vs-invalidation"), shipped("fixed").module, SHARE
    )
    assert finding.verdict == "unknown"
    assert "lacks KVManager._on_peer_gone" in finding.symptom


def test_reused_room_cleanup_is_bug_on_buggy_and_fixed():
    """Their cleanup keeps the set it looked up and pops the address whatever set is there."""
    prop = _prop("stale-tracker", "late-cleanup-keeps-reused-room")
    for name in ("buggy", "fixed"):
        finding = deep.explore_within(prop, shipped(name).module, SHARE)
        assert finding.verdict == "bug", (name, finding.symptom)


def test_finished_room_cleanup_is_bug_on_buggy_and_fixed():
    """Their cleanup tests its set empty, then pops the address: a room tracked between is lost."""
    prop = _prop("stale-tracker", "cleanup-untracks-finished-room")
    for name in ("buggy", "fixed"):
        finding = deep.explore_within(prop, shipped(name).module, SHARE)
        assert finding.verdict == "bug", (name, finding.symptom)
        assert "of a new request on the same prefill is tracked nowhere" in finding.symptom


def test_resend_property_is_not_judged_without_the_callback():
    prop = _prop("restart-recovery", "resend-avoids-dead-peer")
    finding = deep.explore_within(prop, shipped("fixed").module, SHARE)
    assert finding.verdict == "unknown"
    assert "lacks KVManager._on_peer_gone" in finding.symptom
