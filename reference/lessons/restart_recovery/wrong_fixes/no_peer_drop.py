"""Wrong fix: on a peer's disconnect, mark the waiting requests but keep the cache.

Tempting: the requests caught in flight are what visibly fail, so marking them for a
resend looks like the whole job, and the fixed form's invalidations (failed send,
waiting timeout) "already" clear the cache. Wrong: with upstream's sockets a send to
the dead port is queued silently and never fails; the next request hits the cached
generation, sends to the old ports and fails on its waiting timeout, 300 s later,
after the new prefill has long registered. Breaks hardened item 1 (drop the cached
generations that send to a dead endpoint as soon as the socket reports it).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _on_peer_gone(self, endpoint: str) -> None:
        for receiver in list(self.receivers.values()):  # the cache is left as it was
            if receiver.sent_to(endpoint):
                receiver.lost_peer = True
