"""The fixed variant, plus a non-daemon thread started at import that never ends."""

import threading

from reference.fixed import BootstrapServer, DPDispatcher, KVManager, KVReceiver

threading.Thread(target=threading.Event().wait, name="stray-at-import").start()

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
