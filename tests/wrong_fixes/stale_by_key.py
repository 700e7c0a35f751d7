"""stale-bootstrap: invalidate by key, whatever generation is cached now (not identity)."""

import reference.fixed


class KVManager(reference.fixed.KVManager):
    pass


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            for key in self._connection_pool_entries:
                self.kv_mgr.connection_pool.pop(key, None)
        self._connection_pool_entries.clear()
