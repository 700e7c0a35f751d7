"""Fill the cache with a plain locked assignment: the last receiver to fill a key wins.

Tempting: the write is under the lock, so it looks race-free, and the receiver records
exactly the object it wrote, so its own invalidation is identity-safe.
Wrong: two receivers filling one key concurrently each keep their own list; the pool
holds only the last one. If the other receiver later fails on the (now stale) entry,
it invalidates an object that is no longer cached, and the stale one stays.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            with self.kv_mgr.connection_lock:
                cached = self.kv_mgr.connection_pool.get(key)
            if cached is None:
                infos = self._fetch_bootstrap_infos(cp_rank)
                if infos is None:
                    self._fail_fetch()
                    self.invalidate_cached_bootstrap_infos()
                    return
                self.bootstrap_infos = infos
                self._connection_pool_entries[key] = infos
                if not self._register_kv_args():
                    self.invalidate_cached_bootstrap_infos()
                    return
                with self.kv_mgr.connection_lock:
                    self.kv_mgr.connection_pool[key] = infos  # the mistake: overwrite, no adoption
            else:
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
