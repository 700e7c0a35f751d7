"""Invalidate when the cached list *equals* the one this receiver used (`==`, not `is`).

Tempting: "drop only the entry that still matches that generation" reads naturally as
a comparison of contents, `==` is what one writes by habit, and whenever a restart
moves the ranks to new ports the two lists differ, so every test with ephemeral ports
passes. Wrong: equality is not identity. A prefill that restarts on the *same* ports
(fixed ports, a Kubernetes pod with a pinned `--port`, a quick rebind) gives a new
generation equal to the old one; another receiver fetched it and re-registered this
decode with the new process, and a late failure on the old generation still drops the
new one (one more `/route` fetch and re-registration per late failure, as `by_key`).
The same happens without a restart when the heartbeat evicted an entry of a prefill
that was only unreachable for a while and another receiver fetched the unchanged ports
again. The property it breaks: a replacement generation installed by another receiver
survives a late failure on the old one (`replacement-survives`, with equal ports).
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        with self.kv_mgr.connection_lock:
            for key, infos in self._connection_pool_entries.items():
                if self.kv_mgr.connection_pool.get(key) == infos:  # the mistake: equality
                    del self.kv_mgr.connection_pool[key]
        self._connection_pool_entries.clear()
