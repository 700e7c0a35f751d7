"""Cache the fetched list first (`setdefault`), then register; invalidate if registering fails.

Tempting: the entry is recorded and cached before anything can fail, so the
registration-failure invalidation has something to drop, and the fill race is settled
early by `setdefault`.
Wrong: between the cache write and the registration, another receiver finds the entry,
skips the fetch and the registration, and sends its metadata to ranks that have never
heard of this decode: they refuse it (sglang before 0.5.17 had this order).
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
                with self.kv_mgr.connection_lock:  # the mistake: cached before registering
                    self.bootstrap_infos = self.kv_mgr.connection_pool.setdefault(key, infos)
                self._connection_pool_entries[key] = self.bootstrap_infos
                if not self._register_kv_args():
                    self.invalidate_cached_bootstrap_infos()
                    return
            else:
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
