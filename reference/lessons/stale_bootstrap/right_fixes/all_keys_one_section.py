"""Right fix: every CP key looked up and recorded in one locked section, then misses filled.

Upstream's fix looks each key up under the lock as it goes. Here one section reads all
of this receiver's keys at once and records each hit (so the hits are a consistent
picture of the cache at one moment, and the lock is taken once on the hit path); then
each miss is fetched, registered and installed with `setdefault` under the lock,
recording the object that ends up cached (a concurrent winner's, if any). Correct: a
recorded object is always one that was in the pool, and invalidation (the fixed form's,
identity under the lock) drops exactly those, so a failure drops every key it used
(hits and fills) and nothing anyone installed later; no transport call is made with
the lock held.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager


class KVReceiver(reference.fixed.KVReceiver):
    def _setup_bootstrap_infos(self) -> None:
        mgr = self.kv_mgr
        keys = {cp_rank: self._bootstrap_key(cp_rank) for cp_rank in self.target_cp_ranks}
        with mgr.connection_lock:
            hits = {cp: mgr.connection_pool.get(key) for cp, key in keys.items()}
            for cp, key in keys.items():
                if hits[cp] is not None:
                    self._connection_pool_entries[key] = hits[cp]
        all_infos: list[dict] = []
        for cp_rank, key in keys.items():
            used = hits[cp_rank]
            if used is None:
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
                with mgr.connection_lock:
                    used = mgr.connection_pool.setdefault(key, infos)
                    self._connection_pool_entries[key] = used
            all_infos.extend(used)
        self.bootstrap_infos = all_infos


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
