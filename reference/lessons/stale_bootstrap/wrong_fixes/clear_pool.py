"""On any failure, clear the whole `connection_pool`.

Tempting: simplest possible, obviously removes the stale entry, and a cache miss only
costs a `/route` fetch.
Wrong: every other prefill's entries go too (and any fresh generation of this one):
each failure costs every prefill a fetch and a re-registration on its next request.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            self.kv_mgr.connection_pool.clear()
        self._connection_pool_entries.clear()
