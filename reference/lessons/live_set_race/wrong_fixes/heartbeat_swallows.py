"""Wrong fix: keep the heartbeat alive with a `try` around `_handle_node_failure`.

Tempting: upstream's heartbeat calls the handler without a `try`, and a heartbeat that
can die of any exception is fragile whatever the cause; catching and logging in the
probe is good hygiene and makes the thread death go away. Wrong as *the* fix: the
handler still iterates the live set and stops where it changed size, so the rooms
after that point are never failed. Caught by the story and `every-affected-room-failed`.
"""

import logging

from reference.buggy import KVManager as _Buggy
from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    _handle_node_failure = _Buggy._handle_node_failure  # the loop as before the fix

    def _probe(self, addr: str) -> None:
        try:
            super()._probe(addr)
        except Exception:
            logging.getLogger(__name__).debug("heartbeat probe of %s failed", addr, exc_info=True)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
