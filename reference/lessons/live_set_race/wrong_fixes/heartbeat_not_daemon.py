"""Wrong fix: run the heartbeat in a non-daemon thread, so it is never cut off mid-loop.

Tempting: the lesson's bug is a failure handler that stops half-way through its rooms; a
daemon thread is killed wherever it is when the interpreter exits, so a non-daemon one
looks safer, and `close()` stops it anyway. Wrong: a decode whose main thread exits
without calling `close()` (an unhandled exception, a signal) now hangs for ever on its
heartbeat; upstream starts it with `daemon=True`. Caught by the simulation
(`threads-alive`: a thread the managers start is a daemon).
"""

import threading

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def start_heartbeat(self) -> None:
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, name="kv-heartbeat")
        self._heartbeat.start()


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
