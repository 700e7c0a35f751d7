"""Invalidate only the first cache key the receiver used (the `bootstrap_infos` of CP rank 0).

Tempting: with context parallelism 1, the default, a receiver uses exactly one key, and
"the entry this receiver used" reads as one entry.
Wrong: with CP size 2 a receiver uses one key per prefill CP rank; the others keep
their dead ports and the next request fails again on them.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            for key, infos in list(self._connection_pool_entries.items())[:1]:
                if self.kv_mgr.connection_pool.get(key) is infos:
                    del self.kv_mgr.connection_pool[key]
        self._connection_pool_entries.clear()
