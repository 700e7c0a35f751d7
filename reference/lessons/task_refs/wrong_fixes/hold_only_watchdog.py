"""Wrong fix: keep a reference to the watchdog, the loop the bug report was about.

Tempting: the visible failure (a dead rank going unnoticed) is the watchdog's, the
story makes exactly that loop collectable, and the listener and the sweep are
"obviously" held by their socket and timer today. Wrong: what a loop waits on is an
accident of today's code; a result listener whose reader holds it weakly is destroyed
and every request times out after 180 s, and a sweep whose timer holds it weakly is
destroyed and `req_id_to_rank` grows. Caught by `two-dispatchers-independent`
(every loop collectable) and `ended-loops-released` (the story passes).
"""

import asyncio
import logging

from reference.fixed import BootstrapServer, KVManager, KVReceiver
from reference.fixed import DPDispatcher as _Fixed


class DPDispatcher(_Fixed):
    def start(self) -> None:
        listener = asyncio.create_task(self._result_listener())
        self.watchdog_task = asyncio.create_task(self._worker_watchdog())  # the one that bit us
        sweep = asyncio.create_task(self._cleanup_stale_mappings())
        logging.getLogger(__name__).debug("started %s, %s", listener.get_name(), sweep.get_name())


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
