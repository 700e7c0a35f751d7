"""On a metadata send that fails, invalidate and record, then go on with the other ranks.

Tempting: one unreachable rank should not keep the others from starting; the request
is failed and its entry dropped either way, so the remaining sends look harmless.
Wrong: the ranks sent to after the failure write the request's KV into decode pages the
scheduler frees as soon as it sees the request failed. Upstream's `send_metadata`
returns from its `except zmq.ZMQError`.
"""

from typing import Any

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager
from reference.transport.base import TransportError

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def send_metadata(self, kv_indices: list[int]) -> None:
        if self.bootstrap_infos is None:
            self._fail("send_metadata without bootstrap info (init failed)")
            return
        failed: Any = None
        for info in self.bootstrap_infos:
            try:
                sock = self._connect_to_bootstrap_server(info)
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                failed = failed or (info, exc)
        if failed is not None:
            self.invalidate_cached_bootstrap_infos()
            self._fail_send(*failed)
            return
        self.init_time = self.kv_mgr.clock.now()
