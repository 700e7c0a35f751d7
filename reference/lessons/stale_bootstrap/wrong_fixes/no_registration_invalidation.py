"""Invalidate everywhere except after a failed KV-args registration.

Tempting: a failed registration returns before its list is cached, so, as upstream's
own comment says, it leaves no stale entry behind: nothing to invalidate.
Wrong: with CP size 2 the entry of the first CP rank is already cached when the
registration with the second fails because the prefill just restarted: that entry
names the dead process's ports and stays for the next request.
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
                    return  # the mistake: the entries filled so far stay
                with self.kv_mgr.connection_lock:
                    self.bootstrap_infos = self.kv_mgr.connection_pool.setdefault(key, infos)
                self._connection_pool_entries[key] = self.bootstrap_infos
            else:
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos
