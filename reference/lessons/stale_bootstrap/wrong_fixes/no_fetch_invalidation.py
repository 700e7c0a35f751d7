"""Invalidate on registration failure, send failure and timeout, but not when `/route` fails.

Tempting: a failed fetch caches nothing, so there seems to be nothing to invalidate:
the PR description itself lists only registration, send and timeout.
Wrong: with CP size 2 the receiver may already have filled the entry of its first CP
rank when the fetch for the second fails because the prefill just died: that entry
names the dead process's ports and stays cached for the next request.
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
                    self._fail_fetch()  # the mistake: the entries filled so far stay
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
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
