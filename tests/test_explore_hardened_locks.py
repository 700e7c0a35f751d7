"""The explorations of hardened's locked steps (reference/explore: late_kv_write.py,
failure_records.py, restart_recovery.py and stale_tracker.py's `clear-keeps-reused-room`).

Each property holds on hardened (exhaustively or within its bound) and is `bug` on a
hand-made copy of hardened's manager with the one step the property guards done the
tempting way: a read-modify-write split from its lock, a store without it, a check split
from its store, the expired holds not let go of first, a deletion without the lock, a pop
moved before it. Run in process through the default run's entry (`deep.explore_within`),
with a bound share; a variant without the method a property needs is `unknown`.
"""

import types

import pytest

import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.variants import shipped

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


def _variant(manager: type) -> types.ModuleType:
    module = types.ModuleType(f"broken_{manager.__name__}")
    module.KVManager = manager  # type: ignore[attr-defined]
    module.KVReceiver = reference.hardened.KVReceiver  # type: ignore[attr-defined]
    return module


def _prop(lesson: str, prop_id: str):
    (prop,) = [p for p in PROPERTIES[lesson] if p.id == prop_id]
    return prop


CASES = [
    ("late-kv-write", "late-answers-release-held", SplitCountDown, "still in doubt"),
    ("late-kv-write", "hold-during-allocation", KeepsExpired, "passed HOLD_FOR"),
    ("late-kv-write", "hold-during-allocation", UnlockedHold, "dictionary changed size during iteration"),
    ("failure-records", "no-record-after-clear", SplitGuard, "keeps a failure record"),
    ("restart-recovery", "peer-gone-vs-invalidation", _PeerGoneUnlocked, "KeyError"),
    ("stale-tracker", "clear-keeps-reused-room", _ClearPopsFirst, "tracked nowhere"),
]


@pytest.mark.parametrize(
    ("lesson", "prop_id", "broken", "symptom"), CASES, ids=[f"{c[1]}-{c[2].__name__}" for c in CASES]
)
def test_holds_on_hardened_and_finds_the_broken_copy(lesson, prop_id, broken, symptom):
    prop = _prop(lesson, prop_id)
    held = deep.explore_within(prop, reference.hardened, SHARE)
    assert held.verdict == "ok", held.symptom
    assert prop.bound is not None or "(exhaustive)" in held.symptom, held.symptom
    found = deep.explore_within(prop, _variant(broken), SHARE)
    assert found.verdict == "bug", found.symptom
    assert symptom in found.symptom and found.schedule


@pytest.mark.parametrize("lesson", ["late-kv-write", "failure-records"])
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
