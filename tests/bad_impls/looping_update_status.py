"""The fixed variant, except that `KVManager.update_status` spins for ever (on the
caller's thread, holding the GIL between bytecodes): lesson failed-resurrect hangs."""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as FixedKVManager


class KVManager(FixedKVManager):
    def update_status(self, bootstrap_room, status):
        while True:
            pass


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
