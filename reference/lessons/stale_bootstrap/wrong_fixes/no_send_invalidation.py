"""Invalidate on the waiting timeout only, not when `send_metadata` fails.

Tempting: upstream's sockets never fail a send to a dead port (ZMQ_IMMEDIATE=0), so the
waiting timeout catches every stale entry anyway; one invalidation site looks tidier.
Wrong: a send that does fail (fail-fast sockets, a full send queue, the send timeout
of PR #31144) ends the request at once with `init_time` unset, so its waiting timeout
never runs: the stale entry stays and the next request fails the same way.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager
from reference.transport.base import TransportError

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def send_metadata(self, kv_indices: list[int]) -> None:
        if self.bootstrap_infos is None:
            self._fail("send_metadata without bootstrap info (init failed)")
            return
        for info in self.bootstrap_infos:
            try:
                sock = self._connect_to_bootstrap_server(info)
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                self._fail_send(info, exc)  # the mistake: no invalidation here
                return
        self.init_time = self.kv_mgr.clock.now()
