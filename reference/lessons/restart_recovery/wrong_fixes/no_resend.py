"""Wrong fix: a request whose prefill died after its metadata was sent just waits.

Tempting: the metadata was sent, the prefill may still answer, and resending looks
risky (a duplicate transfer); the waiting timeout will end it if not. Wrong: a dead
process answers nothing, and no KV of this request moved (a rank writes, then
reports), so the request can only fail, 300 s later, on its waiting timeout, though
its successor was up within milliseconds. Breaks hardened item 3 (resend to the
successor a request whose prefill died before answering).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _resend_after_peer_loss(self) -> None:
        self.lost_peer = False  # noted, and nothing done about it
