"""The identity-checked invalidation, but without `connection_lock`: check, then delete.

Tempting: the identity check is the subtle part and it is kept (`pool.get(key) is
infos`); each of the two steps is one dict operation, atomic under the GIL, so the
lock looks like ceremony. Wrong: the pair is not atomic. Between the check and the
`del`, another thread can replace the entry (a receiver's fill installs the new
generation after the heartbeat evicted the old one) and the `del` then drops the new
generation the check never looked at; or the heartbeat's `_handle_node_failure`
evicts the key first and the `del` raises `KeyError` out of `send_metadata` or the
waiting timeout, into the scheduler. The property it breaks: invalidation removes
only the generation this receiver used, atomically with respect to every other pool
writer (the checks' scripted points are transport calls and cannot fall between two
dict operations; the simulation and the explorations can).
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        pool = self.kv_mgr.connection_pool
        for key, infos in self._connection_pool_entries.items():
            if pool.get(key) is infos:  # checked ...
                del pool[key]  # ... and deleted later, with nothing held in between
        self._connection_pool_entries.clear()
