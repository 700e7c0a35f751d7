"""The fixed variant, except that `DPDispatcher.start` blocks for ever (inside the event
loop, which then never runs again): lesson task-refs hangs."""

import threading

from reference.fixed import BootstrapServer, KVManager, KVReceiver
from reference.fixed import DPDispatcher as FixedDPDispatcher


class DPDispatcher(FixedDPDispatcher):
    def start(self):
        threading.Event().wait()


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
