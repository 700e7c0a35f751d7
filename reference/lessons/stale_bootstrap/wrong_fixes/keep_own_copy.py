"""Fill with `setdefault` (so the first writer wins) but keep using, and recording, one's own list.

Tempting: `setdefault` is the textbook cure for the fill race, and the receiver's own
list has the same ports anyway, so using it looks harmless.
Wrong: the receiver records an object that is not the cached one. When it later fails
on that prefill, its identity-safe invalidation finds nothing to drop and the winner's
entry, now stale, stays cached: the next request fails again.
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
                    self.kv_mgr.connection_pool.setdefault(
                        key, infos
                    )  # the mistake: the winner is not adopted
            else:
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
