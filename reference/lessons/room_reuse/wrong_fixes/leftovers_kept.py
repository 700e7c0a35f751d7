"""Wrong fix: a new lifecycle starts on Bootstrapping, but the room's leftovers stay.

Tempting: `clear()` already pops the room's status and response tracker, so a new
request on the same id "starts empty" anyway; the opening write only needs to number
the lifecycle. Wrong: what a late write of the previous request leaves between its
`clear()` and the new open (a failure record from a late abort, a prefill answer
counted in `prefill_response_tracker`, a stale `awaiting_transfer` mark) is inherited
by the new request: its failure reason is the old one, and answers it never got count
toward its Success. Breaks hardened item 1 (a new lifecycle clears the room's
leftovers).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _open_lifecycle(self, room: int) -> None:
        self.room_lifecycle[room] = next(self._lifecycles)  # numbered, nothing cleared
        self.request_status[room] = KVPoll.Bootstrapping
