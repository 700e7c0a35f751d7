"""The restart-recovery and stale-tracker explorations added for the hardened lock gaps.

`peer-gone-vs-invalidation` (reference/explore/restart_recovery.py) and
`clear-keeps-reused-room` (reference/explore/stale_tracker.py), each run as the default
run's deep check does (`deep.explore_within`): `ok` on hardened, `bug` on a hand-made
copy of hardened with the one lock the property is about moved or removed (the
semantic mutants `484c3eeed4` and `4d1cfe295c` of reference/mutate/RESULTS.md).
"""

import types

import pytest

import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.variants import shipped

SECONDS = 20.0  # each search ends in well under a second here; the bound only caps a hang


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


def _broken(name: str, manager: type) -> types.ModuleType:
    module = types.ModuleType(name)
    module.KVManager = manager  # type: ignore[attr-defined]
    module.KVReceiver = reference.hardened.KVReceiver  # type: ignore[attr-defined]
    return module


def _prop(lesson: str, prop_id: str):
    (prop,) = [p for p in PROPERTIES[lesson] if p.id == prop_id]
    return prop


CASES = [
    ("restart-recovery", "peer-gone-vs-invalidation", _PeerGoneUnlocked, "KeyError"),
    ("stale-tracker", "clear-keeps-reused-room", _ClearPopsFirst, "tracked nowhere"),
]


@pytest.mark.parametrize(("lesson", "prop_id", "manager", "symptom"), CASES)
def test_holds_on_hardened(lesson, prop_id, manager, symptom):
    finding = deep.explore_within(_prop(lesson, prop_id), shipped("hardened").module, seconds=SECONDS)
    assert finding.verdict == "ok", finding.symptom
    assert "(exhaustive)" in finding.symptom


@pytest.mark.parametrize(("lesson", "prop_id", "manager", "symptom"), CASES)
def test_finds_the_moved_lock(lesson, prop_id, manager, symptom):
    module = _broken(f"broken_{prop_id.replace('-', '_')}", manager)
    finding = deep.explore_within(_prop(lesson, prop_id), module, seconds=SECONDS)
    assert finding.verdict == "bug", finding.symptom
    assert symptom in finding.symptom
    assert finding.schedule


def test_peer_loss_property_is_not_judged_without_the_callback():
    finding = deep.explore_within(
        _prop("restart-recovery", "peer-gone-vs-invalidation"), shipped("fixed").module, seconds=SECONDS
    )
    assert finding.verdict == "unknown"
    assert "lacks KVManager._on_peer_gone" in finding.symptom
