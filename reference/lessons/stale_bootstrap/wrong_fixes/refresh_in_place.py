"""Instead of dropping a stale entry, re-fetch `/route` and refresh the cached list in place.

Tempting: it saves the next request a miss, keeps the object identity (so concurrent
holders see the new ports too) and needs no change to the fill path.
Wrong: nobody re-registers this decode's KV memory with the restarted prefill, which
only learns of a decode through a registration: every later request reaches the new
ports and is refused as unregistered.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        for key, infos in self._connection_pool_entries.items():
            fresh = self._fetch_bootstrap_infos(int(key.split("_")[-2]))
            with self.kv_mgr.connection_lock:
                if self.kv_mgr.connection_pool.get(key) is infos:
                    if fresh is None:
                        del self.kv_mgr.connection_pool[key]
                    else:
                        infos[:] = fresh
        self._connection_pool_entries.clear()
