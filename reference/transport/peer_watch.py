"""Which PUSH-socket peers went away: ZMQ socket monitors on one watcher thread.

When a prefill process dies, the kernel closes its TCP connections and libzmq reports
`EVENT_DISCONNECTED` on the decode's PUSH socket to it, within a millisecond on
127.0.0.1, whatever the socket options (with upstream's IMMEDIATE=0 the socket then
keeps reconnecting and queues sends silently, so nothing else tells the decode). A
`PeerWatch` attaches a monitor to each PUSH socket it is given and, on one daemon
thread, calls every callback with the endpoint whose peer went away and counts it.

Cost: one inproc PAIR socket per PUSH socket (two file descriptors are not used: inproc
needs none) and one thread per transport, polling every `POLL_MS` for new sockets and
its stop flag. `close()` stops the thread and closes the monitors.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import zmq
from zmq.utils.monitor import recv_monitor_message

POLL_MS = 20


class PeerWatch:
    def __init__(self) -> None:
        self._callbacks: list[Callable[[str], None]] = []
        self._new: list[zmq.Socket] = []
        self._retired: list[zmq.Socket] = []
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self.peers_gone = 0
        self._thread = threading.Thread(target=self._run, name="peer-watch", daemon=True)
        self._thread.start()

    def add_callback(self, callback: Callable[[str], None]) -> None:
        with self._lock:
            self._callbacks.append(callback)

    def watch(self, sock: zmq.Socket) -> zmq.Socket:
        """Monitor `sock` for disconnects; returns the monitor socket (hand it to `retire`)."""
        monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        with self._lock:
            self._new.append(monitor)
        return monitor

    def retire(self, monitor: zmq.Socket) -> None:
        """The PUSH socket is about to close: stop watching it (the watcher closes the monitor)."""
        with self._lock:
            self._retired.append(monitor)

    def wait_for(self, count: int, timeout: float) -> bool:
        """Block (bounded) until `count` peers went away in all; whether they did."""
        end = time.monotonic() + timeout
        with self._lock:
            while self.peers_gone < count:
                left = end - time.monotonic()
                if left <= 0 or not self._lock.wait(left):
                    return self.peers_gone >= count
        return True

    def _run(self) -> None:
        poller, monitors = zmq.Poller(), set()
        try:
            while not self._stop.is_set():
                with self._lock:
                    new, self._new = self._new, []
                    retired, self._retired = self._retired, []
                for monitor in new:
                    poller.register(monitor, zmq.POLLIN)
                    monitors.add(monitor)
                for monitor in retired:
                    if monitor in monitors:
                        poller.unregister(monitor)
                        monitors.discard(monitor)
                        monitor.close(linger=0)
                for monitor, _ in poller.poll(POLL_MS):
                    self._on_event(recv_monitor_message(monitor))
        finally:
            for monitor in monitors | set(self._new):
                monitor.close(linger=0)

    def _on_event(self, event: dict) -> None:
        if event["event"] != zmq.EVENT_DISCONNECTED:
            return
        endpoint = (
            event["endpoint"].decode() if isinstance(event["endpoint"], bytes) else str(event["endpoint"])
        )
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback(endpoint)
        with self._lock:
            self.peers_gone += 1
            self._lock.notify_all()

    def close(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
