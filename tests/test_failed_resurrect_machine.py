"""Property-based check of `update_status` over open / write / clear / late-Failed.

The invariant of PR #24539: a room that was cleared and not opened again is absent
from `request_status`, whatever late Failed writes arrive. Hypothesis drives random
interleavings; the fixed manager must hold the invariant, and on the buggy one
Hypothesis must find (and shrink) the resurrection.
"""

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import reference.buggy
import reference.fixed
from reference.lessons.failed_resurrect.scenario import late_abort
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

pytestmark = pytest.mark.lesson(id="failed-resurrect")
rooms = st.integers(min_value=0, max_value=5)
progress = st.sampled_from([KVPoll.WaitingForInput, KVPoll.Transferring, KVPoll.Success])
SETTINGS = settings(
    max_examples=200,
    stateful_step_count=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def machine_for(variant):
    class StatusMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.manager = variant.KVManager(MockNetwork())
            self.open: set[int] = set()
            self.cleared: set[int] = set()

        @rule(room=rooms)
        def open_room(self, room):
            self.manager.update_status(room, KVPoll.Bootstrapping)
            self.open.add(room)
            self.cleared.discard(room)

        @rule(room=rooms, status=progress)
        def write(self, room, status):
            if room in self.open:
                self.manager.update_status(room, status)

        @rule(room=rooms)
        def clear(self, room):
            if room in self.open:
                self.manager.clear(room)
                self.open.discard(room)
                self.cleared.add(room)

        @rule(room=rooms)
        def late_failed(self, room):
            late_abort(self.manager, room)

        @invariant()
        def cleared_rooms_stay_cleared(self):
            back = self.cleared & set(self.manager.request_status)
            assert not back, f"cleared rooms resurrected: {sorted(back)}"

    return StatusMachine


def test_fixed_never_resurrects_a_cleared_room():
    run_state_machine_as_test(machine_for(reference.fixed), settings=SETTINGS)


def test_hypothesis_finds_the_resurrection_in_buggy():
    with pytest.raises(AssertionError, match="cleared rooms resurrected"):
        run_state_machine_as_test(machine_for(reference.buggy), settings=SETTINGS)
