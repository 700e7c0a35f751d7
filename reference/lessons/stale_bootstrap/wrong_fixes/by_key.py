"""Invalidate by key under the lock: `pool.pop(key)` for every key this receiver used.

Tempting: it is what "drop the stale entry" says, it is locked, and every single-receiver
test passes: the key is gone, the next request re-fetches.
Wrong: a receiver that fails late, still holding the pre-restart generation, drops the
new generation another receiver installed in the meantime (identity, not the key, says
which entry is stale): one more `/route` fetch and re-registration per late failure,
and with many receivers in flight the fresh entry keeps being thrown away.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            for key in self._connection_pool_entries:
                self.kv_mgr.connection_pool.pop(key, None)
        self._connection_pool_entries.clear()
