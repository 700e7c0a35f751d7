"""The loopback transport: real pyzmq sockets and real HTTP, on 127.0.0.1 only.

What upstream's decode does with sockets, in one object per process:

- HTTP to bootstrap servers with one keep-alive `requests.Session` (`/health` with
  upstream's (2, 3) s timeout, `/route` and `POST /register_dp_rank` with 5 s);
- the PUSH socket cache (upstream: class-level on `CommonKVReceiver`), each socket
  with LINGER 0 and a bounded send (SNDTIMEO, upstream 1 s since #31144); a send that
  times out raises `TransportError`;
- `bind_inbox`: a PULL socket on an ephemeral port and a listener thread that hands
  every message to a handler (upstream: the decode thread).

Peer loss (`watch_peers=True`, or a first `on_peer_gone` callback): each PUSH socket
gets a ZMQ socket monitor (`peer_watch.py`) that reports the endpoint when its peer's
TCP connection goes away; `peers_gone` counts them.

One zmq Context per transport, destroyed by `close()`, which also stops the listener
threads and closes the HTTP session: nothing outlives it. Any other host than
127.0.0.1/localhost is refused.

Socket options are upstream's by default (`sockets.py`): IMMEDIATE=0, so a send to a
port nobody listens on returns at once and the message queues silently (up to SNDHWM,
1000); the request then ends on its waiting timeout. `immediate=True` (the `fail-fast`
option) makes such a send fail after the send timeout instead. Either way a stale port
means a failed request; only how soon the decode learns of it differs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import requests
import zmq

from reference.transport.base import Frames, Handler, Reply, TransportError
from reference.transport.peer_watch import PeerWatch

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
POLL_MS = 20  # listener threads re-check their stop flag this often


def _check_loopback(addr: str) -> str:
    host = addr.removeprefix("tcp://").rsplit(":", 1)[0]
    if host not in LOOPBACK_HOSTS:
        raise TransportError(f"the loopback transport only talks to 127.0.0.1, not {addr}")
    return addr


class LoopbackPushSocket:
    def __init__(self, sock: zmq.Socket, endpoint: str, timeout: float) -> None:
        self.sock, self.endpoint, self.timeout = sock, endpoint, timeout
        self.lock = threading.Lock()

    def send(self, frames: Frames) -> None:
        try:
            self.sock.send_multipart(list(frames))
        except zmq.Again:
            raise TransportError(f"send to {self.endpoint} timed out after {self.timeout} s") from None
        except zmq.ZMQError as exc:
            raise TransportError(f"send to {self.endpoint}: {exc}") from None


class LoopbackTransport:
    host = "127.0.0.1"  # where `bind_inbox` binds (the netns transport: this host's address)

    def _checked(self, addr: str) -> str:
        """`addr`, or TransportError when it is not a peer this transport may talk to."""
        return _check_loopback(addr)

    def __init__(self, send_timeout: float = 1.0, immediate: bool = False, watch_peers: bool = False) -> None:
        self.send_timeout, self.immediate = send_timeout, immediate
        self.ctx = zmq.Context()
        self._sockets: dict[str, LoopbackPushSocket] = {}
        self._global_lock = threading.Lock()
        self._http = requests.Session()
        self._http_lock = threading.Lock()
        self._stop = threading.Event()
        self._listeners: list[threading.Thread] = []
        self.route_fetches = 0
        self.handler_errors = 0
        self._peer_watch: PeerWatch | None = None
        self._monitors: dict[str, zmq.Socket] = {}
        if watch_peers:
            self._watch_peers()

    # -- HTTP ------------------------------------------------------------------------------
    def health(self, bootstrap_addr: str) -> bool:
        try:
            with self._http_lock:
                url = f"http://{self._checked(bootstrap_addr)}/health"
                return self._http.get(url, timeout=(2, 3)).status_code == 200
        except (requests.RequestException, TransportError):
            return False

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        self.route_fetches += 1
        url = f"http://{self._checked(bootstrap_addr)}/route"
        try:
            with self._http_lock:
                response = self._http.get(url, params=dict(params), timeout=5)
        except requests.RequestException as exc:
            raise TransportError(f"GET {url}: {type(exc).__name__}") from None
        is_json = response.headers.get("Content-Type", "").startswith("application/json")
        return Reply(response.status_code, response.json() if is_json else response.text)

    def register_dp_rank(self, bootstrap_addr: str, room: int, dp_rank: int) -> Reply:
        url = f"http://{self._checked(bootstrap_addr)}/register_dp_rank"
        try:
            with self._http_lock:
                response = self._http.post(url, json={"bootstrap_room": room, "dp_rank": dp_rank}, timeout=5)
        except requests.RequestException as exc:
            raise TransportError(f"POST {url}: {type(exc).__name__}") from None
        return Reply(response.status_code, response.text)

    # -- PUSH sockets ----------------------------------------------------------------------
    def connect(self, endpoint: str) -> LoopbackPushSocket:
        with self._global_lock:
            cached = self._sockets.get(endpoint)
            if cached is not None:
                return cached
            sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDTIMEO, int(self.send_timeout * 1000))
            sock.setsockopt(zmq.IMMEDIATE, int(self.immediate))
            try:
                sock.connect(self._checked(endpoint))
            except (zmq.ZMQError, TransportError) as exc:
                sock.close()
                raise TransportError(f"connect to {endpoint}: {exc}") from None
            self._sockets[endpoint] = LoopbackPushSocket(sock, endpoint, self.send_timeout)
            if self._peer_watch is not None:
                self._monitors[endpoint] = self._peer_watch.watch(sock)
            return self._sockets[endpoint]

    def disconnect(self, endpoint: str) -> None:
        with self._global_lock:
            cached = self._sockets.pop(endpoint, None)
            monitor = self._monitors.pop(endpoint, None)
        if monitor is not None and self._peer_watch is not None:
            self._peer_watch.retire(monitor)
        if cached is not None:
            with cached.lock:
                cached.sock.close()

    # -- peer loss -------------------------------------------------------------------------
    def _watch_peers(self) -> PeerWatch:
        with self._global_lock:
            if self._peer_watch is None:
                self._peer_watch = PeerWatch()
                for endpoint, cached in self._sockets.items():
                    self._monitors[endpoint] = self._peer_watch.watch(cached.sock)
            return self._peer_watch

    def on_peer_gone(self, callback: Callable[[str], None]) -> None:
        """Call `callback(endpoint)` (on the watcher thread) when a PUSH socket's peer goes away."""
        self._watch_peers().add_callback(callback)

    @property
    def peers_gone(self) -> int:
        return 0 if self._peer_watch is None else self._peer_watch.peers_gone

    def wait_peers_gone(self, count: int, timeout: float) -> bool:
        """Block (bounded) until `count` peers went away in all (needs `watch_peers`)."""
        return self._peer_watch is not None and self._peer_watch.wait_for(count, timeout)

    # -- the inbox -------------------------------------------------------------------------
    def bind_inbox(self, handler: Handler) -> str:
        pull = self.ctx.socket(zmq.PULL)
        pull.setsockopt(zmq.LINGER, 0)
        port = pull.bind_to_random_port(f"tcp://{self.host}")
        thread = threading.Thread(
            target=self._listen, args=(pull, handler), name=f"inbox-{port}", daemon=True
        )
        self._listeners.append(thread)
        thread.start()
        return f"{self.host}:{port}"

    def _listen(self, pull: zmq.Socket, handler: Handler) -> None:
        try:
            while not self._stop.is_set():
                if not pull.poll(POLL_MS):
                    continue
                frames = pull.recv_multipart()
                try:
                    handler(frames)
                except Exception:  # a handler bug must not silence the inbox
                    self.handler_errors += 1
        finally:
            pull.close()

    def register_memory(self, session: str, memory: object) -> None:
        """Nothing to do: on loopback the KV bytes arrive through the inbox."""

    def close(self, timeout: float = 2.0) -> None:
        self._stop.set()
        for thread in self._listeners:
            thread.join(timeout)
        if self._peer_watch is not None:
            self._peer_watch.close(timeout)
        with self._global_lock:
            self._sockets.clear()
            self._monitors.clear()
        self.ctx.destroy(linger=0)
        self._http.close()
