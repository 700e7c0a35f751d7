"""Invalidate on a failed send, but leave the connect where it was, before the try.

Tempting: the diff stays one line (the invalidation in the except branch), and a connect
to a dead port never fails with ZMQ (connects are asynchronous).
Wrong: a connect can fail (e.g. EMFILE, "Too many open files" under many cached sockets):
the error escapes `send_metadata` into the decode scheduler, the request is not failed
and its stale entry is never invalidated.
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
            sock = self._connect_to_bootstrap_server(info)
            try:
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                self.invalidate_cached_bootstrap_infos()
                self._fail_send(info, exc)
                return
        self.init_time = self.kv_mgr.clock.now()
