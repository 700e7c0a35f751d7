"""The fixed variant, except that `KVManager.update_status` ends the whole process."""

import os

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as FixedKVManager


class KVManager(FixedKVManager):
    def update_status(self, bootstrap_room, status):
        os._exit(3)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
