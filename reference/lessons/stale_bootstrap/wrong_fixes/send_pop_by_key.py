"""Pop `connection_pool[key]` when a send fails: by key, without the lock, connect outside the try.

Tempting: it is the smallest change to the buggy form that makes the failing path
forget the stale ports, and with fail-fast sockets the next request indeed re-fetches.
Wrong: with upstream's socket options a send to a dead port does not fail (it queues
silently), so nothing is ever invalidated and the request dies on its waiting timeout,
again and again; the fetch, registration and timeout paths never invalidate; a connect
error still escapes into the scheduler; and the pop by key drops whatever generation
is cached now, also one another receiver just installed.
"""

from reference.buggy import BootstrapServer, DPDispatcher, KVManager
from reference.buggy import KVReceiver as _BuggyReceiver
from reference.transport.base import TransportError

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(_BuggyReceiver):
    def send_metadata(self, kv_indices: list[int]) -> None:
        if self.bootstrap_infos is None:
            self._fail("send_metadata without bootstrap info (init failed)")
            return
        for info in self.bootstrap_infos:
            sock = self._connect_to_bootstrap_server(info)
            try:
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                for cp_rank in self.target_cp_ranks:
                    self.kv_mgr.connection_pool.pop(self._bootstrap_key(cp_rank), None)
                self._fail_send(info, exc)
                return
        self.init_time = self.kv_mgr.clock.now()
