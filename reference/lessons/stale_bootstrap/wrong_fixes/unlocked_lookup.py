"""The whole fix, except that the cache hit keeps the old unlocked `in`, then `[]`.

Tempting: every invalidation, the identity check, `setdefault` under the lock and the
connect inside the try are there; the lookup "only reads", and reading a dict twice
looks harmless, so the buggy form's two lines are left as they were. Wrong: the two
reads are two steps. The heartbeat's `_handle_node_failure` (under `connection_lock`,
which this lookup does not take) or another receiver's invalidation can delete the key
between `key in pool` and `pool[key]`: the `[]` raises `KeyError` out of `init()` into
the scheduler and the request dies with no status. The property it breaks: a cache
lookup raced by an eviction is a hit or a miss, never an exception (the exploration
`hit-vs-eviction`; the checks' scripted points are transport calls and cannot fall
between the two reads).
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            if key not in self.kv_mgr.connection_pool:  # the mistake: unlocked check ...
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
                    self.bootstrap_infos = self.kv_mgr.connection_pool.setdefault(key, infos)
                self._connection_pool_entries[key] = self.bootstrap_infos
            else:
                cached = self.kv_mgr.connection_pool[key]  # ... then an unlocked read that may raise
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
