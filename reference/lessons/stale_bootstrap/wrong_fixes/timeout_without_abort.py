"""Fail and invalidate on the waiting timeout, and tell the prefill nothing.

Tempting: the request is over and its cache entry is gone; the prefill has its own
timeout for a room nobody asks about, so the notification looks optional.
Wrong: a prefill rank that still holds the room's metadata may write its KV into pages
the decode scheduler frees at once for the next request. Upstream's
`_check_waiting_timeout` tells every rank the request bootstrapped from (`ABORT`), once.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.invalidate_cached_bootstrap_infos()
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed
