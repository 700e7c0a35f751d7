"""Wrong fix: lifecycles as hardened, but a present room's Failed can be lifted by `max()`.

Tempting: upstream's `max()` has always merged statuses, and with per-request
lifecycles a Failed can only come from the room's own request, so letting a later
status win looks harmless. Wrong: a request that failed (aborted, timed out, lost its
prefill) is un-failed by any later Transferring or Success its prefill still sends,
and reads Success with pages that were never fully written (noted in the review of
PR #19205; sglang 0.5.20 made Failed terminal). Breaks hardened item 1 (Failed is
terminal).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        current = self.request_status.get(bootstrap_room)
        if current == KVPoll.Failed and status not in (KVPoll.Failed, KVPoll.Bootstrapping):
            self.request_status[bootstrap_room] = max(current, status)  # the mistake: Failed lifted
            return
        super().update_status(bootstrap_room, status)
