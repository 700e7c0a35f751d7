"""The fixed receiver with upstream's old cache lookup kept: `key in pool`, then `pool[key]`.

Everything else is the fix (identity invalidation under the lock, adopting a concurrent
winner). The lookup is two unlocked steps: the heartbeat evicting the prefill
(`_handle_node_failure`) between them makes `pool[key]` raise KeyError in `init()`.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        pool = self.kv_mgr.connection_pool
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            if key not in pool:
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
                    self.bootstrap_infos = pool.setdefault(key, infos)
                self._connection_pool_entries[key] = self.bootstrap_infos
            else:
                self.bootstrap_infos = pool[key]
                self._connection_pool_entries[key] = self.bootstrap_infos
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
