"""Wrong fix: drop the waiting-timeout invalidation, the disconnect event replaces it.

Tempting: with the socket monitor the decode learns of a dead prefill at once, so the
fixed form's invalidation on the waiting timeout looks redundant, and removing it
saves a `/route` fetch when a prefill is only slow. Wrong: a disconnect is reported
only when the kernel closes the connection (FIN or RST). A network partition, or a
host that vanishes without one, reports nothing; the request times out and the stale
generation stays cached, so every later request fails on it too. Breaks hardened item
4 (the fixed form's invalidations stay).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self._send_abort_once()  # the cached generation is kept
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed
