"""Invalidate every key of this bootstrap address, as the heartbeat's node-failure path does.

Tempting: `_handle_node_failure` already evicts all keys that start with the address;
reusing that rule on a failed request looks consistent and also catches keys of other
CP ranks and DP ranks of the same prefill.
Wrong: it drops by key, not by identity: a late failure on the pre-restart generation
throws away the fresh entry another receiver installed after the restart.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            pool = self.kv_mgr.connection_pool
            for key in [k for k in pool if k.startswith(self.bootstrap_addr)]:
                del pool[key]
        self._connection_pool_entries.clear()
