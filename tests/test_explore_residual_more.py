"""The residual lessons' explorations added against semantic-mutation gaps (issue #21):
stale-tracker's `late-cleanup-keeps-reused-room`, restart-recovery's `resend-avoids-dead-peer`.

Each holds on hardened and on its lesson's right fix, and is `bug` on a hand-made copy of
hardened's manager with the one step the property guards done the tempting way: the
cleanup's first step (take the address, look its set up) without `connection_lock`; the
peer-loss callback marking the waiting requests before it drops the dead generations. Run
in process through the default run's entry (`deep.explore_within`) with a bound share.
"""

import types

import pytest

import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.variants import load_impl, shipped

SHARE = 20.0  # seconds; each search ends in well under a second here, the bound only caps a hang


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


def _variant(manager: type) -> types.ModuleType:
    module = types.ModuleType(f"broken_{manager.__name__}")
    module.KVManager = manager  # type: ignore[attr-defined]
    module.KVReceiver = reference.hardened.KVReceiver  # type: ignore[attr-defined]
    return module


def _prop(lesson: str, prop_id: str):
    (prop,) = [p for p in PROPERTIES[lesson] if p.id == prop_id]
    return prop


CASES = [
    (
        "stale-tracker",
        "late-cleanup-keeps-reused-room",
        _CleanupFirstStepUnlocked,
        "reused by a new request, is tracked nowhere",
        "reference/lessons/stale_tracker/right_fixes/discard_only.py",
    ),
    (
        "restart-recovery",
        "resend-avoids-dead-peer",
        _MarksBeforeDrop,
        "a resend after the peer loss went to the dead rank",
        "reference/lessons/restart_recovery/right_fixes/full_jitter.py",
    ),
]


@pytest.mark.parametrize(
    ("lesson", "prop_id", "broken", "symptom", "right"), CASES, ids=[c[1] for c in CASES]
)
def test_holds_on_hardened_and_its_right_fix_finds_the_broken_copy(lesson, prop_id, broken, symptom, right):
    prop = _prop(lesson, prop_id)
    for module in (reference.hardened, load_impl(right).module):
        held = deep.explore_within(prop, module, SHARE)
        assert held.verdict == "ok", (module.__name__, held.symptom)
        assert prop.bound is not None or "(exhaustive)" in held.symptom, held.symptom
    found = deep.explore_within(prop, _variant(broken), SHARE)
    assert found.verdict == "bug", found.symptom
    assert symptom in found.symptom and found.schedule


@pytest.mark.parametrize("lesson", ["stale-tracker", "restart-recovery"])
def test_registered_as_deep_checks_of_their_lessons(lesson):
    from reference.lessons import LESSONS

    ids = {c.id for c in LESSONS[lesson].checks if c.id.startswith(deep.PREFIX)}
    assert ids == {deep.PREFIX + p.id for p in PROPERTIES[lesson]}, lesson


def test_reused_room_cleanup_is_bug_on_buggy_and_fixed():
    """Their cleanup keeps the set it looked up and pops the address whatever set is there."""
    prop = _prop("stale-tracker", "late-cleanup-keeps-reused-room")
    for name in ("buggy", "fixed"):
        finding = deep.explore_within(prop, shipped(name).module, SHARE)
        assert finding.verdict == "bug", (name, finding.symptom)


def test_resend_property_is_not_judged_without_the_callback():
    prop = _prop("restart-recovery", "resend-avoids-dead-peer")
    finding = deep.explore_within(prop, shipped("fixed").module, SHARE)
    assert finding.verdict == "unknown"
    assert "lacks KVManager._on_peer_gone" in finding.symptom
