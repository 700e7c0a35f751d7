"""Right fix: invalidate by popping the key and putting back an entry that is not ours.

Under `connection_lock`, `pool.pop(key)` takes whatever is cached; if it is not the
object this receiver used (a newer generation another receiver installed), it goes
straight back under the same key before the lock is released. Nobody can observe the
key missing: every reader and writer of the pool takes the lock (the fix's locked
lookup, the heartbeat's eviction), so the pop and the restore are one step to them.
Correct: only the generation this receiver used is dropped, as with upstream's
check-then-delete.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        pool = self.kv_mgr.connection_pool
        with self.kv_mgr.connection_lock:
            for key, used in self._connection_pool_entries.items():
                current = pool.pop(key, None)
                if current is not None and current is not used:
                    pool[key] = current  # a newer generation: not ours to drop
        self._connection_pool_entries.clear()


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
