"""Real pyzmq sockets between upstream's receivers and the scenario's prefill.

Upstream's decode sends every frame through a PUSH socket its own `_connect` makes
(class-level cache, its own options: LINGER 0, and from 0.5.17 SNDTIMEO from
`SGLANG_DISAGGREGATION_ZMQ_SEND_TIMEOUT`; IMMEDIATE left at 0). The adapter calls that
`_connect` unchanged, so the socket, its options and every error its `send_multipart`
raises are real and upstream's: a `zmq.ZMQError` after a send reaches upstream's own
`except zmq.ZMQError`, whatever that release does there.

What the adapter adds is where that socket connects: each prefill rank endpoint of the
scenario's transport (a mock endpoint such as `tcp://10.0.0.1:41000`) gets a real
endpoint on 127.0.0.1, a `Relay`:

- while the scenario's rank is bound, a real PULL socket; after each send that upstream's
  socket accepted, the relay takes that message off the PULL (bounded wait) and hands
  it, in the reference prefill's frames (`receiver.MooncakeWire`), to the scenario's
  transport on the sender's thread, so the mock world stays deterministic;
- once the rank is gone (the transport's peer-gone callback, or never bound), a TCP
  socket bound to the same port that never listens: it refuses every connection (and no
  other socket can take the port; a relay that cannot reserve it, or whose fail-fast
  socket stays writable, makes that run `unknown`, never a verdict it did not see). A PUSH
  socket with IMMEDIATE=0 (upstream's) queues to it silently; with IMMEDIATE=1 (the
  `fail-fast` option, `reference/transport/sockets.py`) its send blocks for the send
  timeout and raises `zmq.Again`, both from libzmq itself. Before a relay refuses a
  fail-fast socket, it waits (bounded) until libzmq reports that socket no longer
  writable (`EVENTS`, read under upstream's own socket lock): its pipe to the closed
  relay is gone, so which send fails does not depend on thread timing.

Two options the adapter sets on upstream's sockets, as the context's defaults for the
socket `_connect` creates (never after its `connect`; upstream's own setting wins):
- SNDTIMEO where a release sets none (before 0.5.17): 1 s, upstream's own value from
  0.5.17 (0.5 s with `fail-fast`). Without it, a send with no pipe left blocks forever:
  0.5.15 (and 0.5.15.post1) also sets RECONNECT_IVL -1 on the decode's PUSH sockets
  (`CommonKVReceiver._connect`), so once a restarted rank's connection drops libzmq
  drops that pipe for good and the next send to it hangs the scheduler (what
  https://github.com/sgl-project/sglang/pull/31144 bounded in 0.5.17). Where the bound
  that fired is the adapter's, reconnecting is off and no pipe is left, the send would
  never have returned upstream: `RealPush` raises `SendNeverReturns` naming upstream's
  caller and `_connect` (never a `zmq.ZMQError`, which upstream's own `except` would
  treat as an error it could see), and `hang_is_bug` makes it that run's verdict,
  `bug`. Any other `zmq.Again` is libzmq's, raised into upstream's own `except`;
- IMMEDIATE=1 with `fail-fast` (an option of this repository, not upstream's).

Upstream's node-failure handler (`_handle_node_failure`, 0.5.14 on) drops the sockets to a
dead prefill's ranks: `CommonKVReceiver.disconnect_endpoint(endpoint)` for each rank
endpoint its connection pool names. Its socket cache is keyed by the relay's 127.0.0.1
endpoint, so that call would find nothing: `relay_disconnects` wraps the classmethod
(upstream's own code still runs, with the endpoint translated): while a manager's
failure handler runs on the thread (`failing`), upstream's `disconnect_endpoint` gets
the relay endpoint of that rank, closes the socket it made there under its own lock,
and the scenario's transport is told (`transport.disconnect(rank endpoint)`, what a
check reads); the relay's monitor of that socket is closed first.

`close()` closes the relays, the monitors and the PUSH sockets the adapter had
upstream's `_connect` make (popping them from upstream's class-level cache): nothing
outlives the scenario's manager (the manager's `close`, or its garbage collection for a
world that never closes it, such as an exploration's).
"""

from __future__ import annotations

import atexit
import itertools
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType
from typing import Any

import zmq

from reference.harness.result import Observation
from reference.transport.base import PushSocket, TransportError
from reference.transport.sockets import FAIL_FAST, UPSTREAM

Translate = Callable[[list[bytes]], list[bytes]]
WAIT_MS = 2000  # a message upstream's socket accepted reaches a live relay within this
POLL_MS = 5  # how often a refusing relay re-reads a fail-fast socket's writability
_MONITORS = itertools.count()
_CONNECTED = zmq.EVENT_CONNECTED
_DISCONNECTED = zmq.EVENT_DISCONNECTED


class Relay:
    """The real 127.0.0.1 endpoint behind one of the scenario's rank endpoints."""

    def __init__(
        self, ctx: zmq.Context, endpoint: str, scenario_sock: PushSocket, alive: bool, immediate: bool
    ) -> None:
        self.scenario_endpoint, self.scenario_sock, self.immediate = endpoint, scenario_sock, immediate
        self.pull: zmq.Socket | None = ctx.socket(zmq.PULL)
        self.pull.setsockopt(zmq.LINGER, 0)
        self.port = self.pull.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.refuser: socket.socket | None = None
        self.pushes: list[tuple[zmq.Socket, Any, zmq.Socket]] = []  # upstream's PUSH, its lock, a monitor
        self.undelivered = 0  # accepted by upstream's socket, never handed on (no live peer)
        self.lock = threading.Lock()
        if not alive:
            self.refuse()

    @property
    def alive(self) -> bool:
        return self.pull is not None

    def watch(self, push: zmq.Socket, lock: Any) -> None:
        """Monitor upstream's PUSH socket for this endpoint (connects, disconnects);
        `lock`: upstream's own lock for that socket."""
        with self.lock:
            if all(known is not push for known, _, _ in self.pushes):
                # A unique address: pyzmq's default names the socket's fd, which a closed
                # socket's monitor may still hold (its events would arrive here).
                addr = f"inproc://relay-monitor-{next(_MONITORS)}"
                self.pushes.append((push, lock, push.get_monitor_socket(_CONNECTED | _DISCONNECTED, addr)))

    def forward(self, translate: Translate) -> None:
        """After upstream's socket accepted one message: hand it to the scenario."""
        with self.lock:
            pull = self.pull
            if pull is None or not pull.poll(WAIT_MS):
                self.undelivered += 1  # queued in upstream's socket for a peer that is gone
                return
            frames = pull.recv_multipart()
        try:
            self.scenario_sock.send(translate(frames))
        except TransportError:
            self.undelivered += 1

    def refuse(self) -> None:
        """The rank is gone: nothing accepts at this port from now on."""
        with self.lock:
            if self.pull is None:
                return
            self.pull.close(linger=0)
            self.pull = None
            self.refuser = _bind_refuser(self.port)
            if self.immediate:  # IMMEDIATE=0 queues whether or not a pipe is left: no wait
                for push, lock, monitor in self.pushes:
                    if not _await_unwritable(push, lock, monitor):
                        gave_up(f"upstream's socket to {self.endpoint} stayed writable {WAIT_MS} ms")

    def unwatch(self, push: zmq.Socket | None = None) -> None:
        """Stop monitoring upstream's socket `push` (every socket if None), before it closes."""
        with self.lock:
            for watched in [w for w in self.pushes if push is None or w[0] is push]:
                watched[0].disable_monitor()
                watched[2].close(linger=0)
                self.pushes.remove(watched)

    def close(self) -> None:
        with self.lock:
            if self.pull is not None:
                self.pull.close(linger=0)
                self.pull = None
            if self.refuser is not None:
                self.refuser.close()
                self.refuser = None
        self.unwatch()


def _bind_refuser(port: int) -> socket.socket | None:
    """A TCP socket bound to `port` on 127.0.0.1 that never listens: connections to it are
    refused, and no other socket (another relay, another test process) can take the port
    and accept them. libzmq closes the relay's listener on its own I/O thread, so the bind
    is retried (bounded) until that listener is gone; if it never goes, the run says so."""
    for _ in range(WAIT_MS // POLL_MS):
        refuser = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        refuser.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            refuser.bind(("127.0.0.1", port))
            return refuser
        except OSError:
            refuser.close()
            time.sleep(POLL_MS / 1000)  # waits on libzmq's I/O thread, not on a scenario's order
    gave_up(f"port {port} of a closed relay could not be reserved within {WAIT_MS} ms")
    return None


def _await_unwritable(push: zmq.Socket, lock: Any, monitor: zmq.Socket) -> bool:
    """Block (bounded) until libzmq would no longer take a message on `push` (IMMEDIATE=1:
    its pipe to the closed relay is gone); False if the bound came first. `EVENTS` is read
    under upstream's own socket lock; the monitor's connect/disconnect events wake the wait."""
    from zmq.utils.monitor import recv_monitor_message

    for _ in range(WAIT_MS // POLL_MS):
        with lock:
            if not int(push.getsockopt(zmq.EVENTS)) & zmq.POLLOUT:
                return True
        if monitor.poll(POLL_MS):
            recv_monitor_message(monitor)
    return False


_GAVE_UP: list[str] = []  # why a relay could not make a closed rank refuse (any thread)


def gave_up(why: str) -> None:
    """A relay could not refuse as its rank's death requires: the run that saw it cannot
    decide (`_hang_observed` makes it `unknown`), whatever upstream's code then did."""
    _GAVE_UP.append(why)


class SendNeverReturns(Exception):
    """Upstream's send blocked where libzmq can never unblock it: reconnecting is off, no
    pipe is left and upstream set no send timeout (the one that fired is the adapter's)."""


class RealPush:
    """Upstream's own PUSH socket; after a send it accepted, the relay hands the message
    on. Every other attribute is the socket's. `bounded`: upstream's `_connect` that made
    it (`Class._connect (file:line)`) where the send timeout is the adapter's, else ""."""

    def __init__(self, sock: zmq.Socket, relay: Relay, translate: Translate, bounded: str = "") -> None:
        self.sock, self.relay, self.translate, self.bounded = sock, relay, translate, bounded

    def send_multipart(self, frames: list[bytes], *args: Any, **kwargs: Any) -> Any:
        try:
            sent = self.sock.send_multipart(frames, *args, **kwargs)  # raises what libzmq raises
        except zmq.Again:
            never = self._never_returns(sys._getframe(1).f_code, sys._getframe(1).f_lineno)
            if never:
                raise SendNeverReturns(never) from None
            raise
        self.relay.forward(self.translate)
        return sent

    def _never_returns(self, caller: CodeType, line: int) -> str:
        """Why this timed-out send would never have returned upstream ("" if it would)."""
        sock = self.sock
        if not self.bounded or self.relay.immediate or sock.getsockopt(zmq.RECONNECT_IVL) != -1:
            return ""
        if int(sock.getsockopt(zmq.EVENTS)) & zmq.POLLOUT:
            return ""  # a pipe is there: libzmq could still take the message
        where = f"{caller.co_qualname} ({_relative(caller.co_filename)}:{line})"
        bound = int(sock.getsockopt(zmq.SNDTIMEO)) / 1000
        return (
            f"{where} sends on a PUSH socket whose peer is gone, and the send never returns: "
            f"{self.bounded} set RECONNECT_IVL -1 and no SNDTIMEO, so libzmq dropped the pipe for good "
            f"and blocks the caller for ever (the adapter's {bound:g} s bound ended the wait)"
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class Relays:
    """One manager's relays, by scenario endpoint, and the sockets upstream made for them."""

    def __init__(self, transport: Any) -> None:
        close_orphans()
        self.transport = transport
        self.ctx = _context()
        self.by_scenario: dict[str, Relay] = {}
        self.made: list[tuple[Any, str]] = []  # (upstream's receiver class, endpoint) per socket
        self.bounded: dict[str, str] = {}  # relay endpoint -> upstream's _connect, where no SNDTIMEO
        self.lock = threading.Lock()
        self.fail_fast = bool(getattr(transport, "immediate", False))
        on_peer_gone = getattr(transport, "on_peer_gone", None)
        if on_peer_gone is not None:
            on_peer_gone(self._gone)

    def relay(self, scenario_endpoint: str) -> Relay:
        # Every upstream connect asks the scenario's transport first, so a connect fault it
        # injects (EMFILE: a `zmq.ZMQError`) is raised where upstream's `_connect` would
        # raise it; outside the lock, as a scenario's connect hook may run a whole request.
        sock = self.transport.connect(scenario_endpoint)  # also arms its peer-gone callback
        with self.lock:
            relay = self.by_scenario.get(scenario_endpoint)
        if relay is not None:
            return relay
        is_bound = getattr(self.transport, "is_bound", None)
        alive = True if is_bound is None else bool(is_bound(scenario_endpoint))
        with self.lock:
            relay = self.by_scenario.get(scenario_endpoint)
            if relay is None:
                relay = self.by_scenario[scenario_endpoint] = Relay(
                    self.ctx, scenario_endpoint, sock, alive, self.fail_fast
                )
            return relay

    def connect(self, cls: Any, relay: Relay, is_ipv6: bool = False) -> tuple[zmq.Socket, Any]:
        """Upstream's own `cls._connect` to the relay; fail-fast's defaults on its context."""
        ctx: zmq.Context = cls._ctx
        with self.lock:
            fresh = relay.endpoint not in cls._socket_cache
            saved = dict(ctx.sockopts)
            if fresh:
                # Where upstream sets no SNDTIMEO (before 0.5.17), a send with no pipe left
                # (0.5.13 to 0.5.16 also set RECONNECT_IVL -1) blocks forever: bounded here.
                timeout = FAIL_FAST.send_timeout if self.fail_fast else UPSTREAM.send_timeout
                ctx.setsockopt(zmq.SNDTIMEO, int(timeout * 1000))
            if fresh and self.fail_fast:
                ctx.setsockopt(zmq.IMMEDIATE, 1)
            try:
                sock, lock = cls._connect(relay.endpoint, is_ipv6)
            finally:
                ctx.sockopts.clear()
                ctx.sockopts.update(saved)
            if fresh:
                self.made.append((cls, relay.endpoint))
                if "SNDTIMEO" not in _names(cls._connect):  # the bound is the adapter's
                    self.bounded[relay.endpoint] = _where(cls._connect)
        relay.watch(sock, lock)
        return sock, lock

    def bounded_by_adapter(self, relay: Relay) -> str:
        """Upstream's `_connect` that made `relay`'s socket where the send timeout is the
        adapter's (`Class._connect (file:line)`), else ""."""
        with self.lock:
            return self.bounded.get(relay.endpoint, "")

    def disconnect(self, cls: Any, scenario_endpoint: str, upstream: Callable[[Any, str], None]) -> None:
        """Upstream's `disconnect_endpoint` (`upstream`, the classmethod's function) for a
        rank endpoint: run on the relay endpoint its socket cache is keyed by, then told to
        the scenario's transport."""
        with self.lock:
            relay = self.by_scenario.get(scenario_endpoint)
        if relay is not None:
            with cls._global_lock:
                push = cls._socket_cache.get(relay.endpoint)
            if push is not None:
                relay.unwatch(push)
        upstream(cls, relay.endpoint if relay is not None else scenario_endpoint)
        self.transport.disconnect(scenario_endpoint)

    def _gone(self, scenario_endpoint: str) -> None:
        with self.lock:
            relay = self.by_scenario.get(scenario_endpoint)
        if relay is not None:
            relay.refuse()

    @property
    def undelivered(self) -> int:
        return sum(relay.undelivered for relay in self.by_scenario.values())

    def close(self) -> None:
        with self.lock:
            relays, made = list(self.by_scenario.values()), list(self.made)
            self.by_scenario.clear()
            self.made.clear()
            self.bounded.clear()
        for relay in relays:
            relay.close()
        for cls, endpoint in made:
            with cls._global_lock:
                sock = cls._socket_cache.pop(endpoint, None)
                getattr(cls, "_socket_locks", {}).pop(endpoint, None)
            if sock is not None:
                sock.close(linger=0)


_ORPHANS: list[Relays] = []  # relays of managers collected unclosed, not yet closed


def close_when_collected(owner: object, relays: Relays) -> None:
    """Close `relays` once `owner` is collected, but not in the collecting thread: a
    collection can run inside any thread, an explored one included, where taking a lock
    would wait on frontrun's scheduler for ever. The next `Relays` made, or the exit,
    closes them."""
    weakref.finalize(owner, _ORPHANS.append, relays)


@atexit.register
def close_orphans() -> None:
    while True:
        try:
            orphan = _ORPHANS.pop()  # one step: two threads making relays never close one twice
        except IndexError:
            return
        orphan.close()


_FAILING = threading.local()  # .relays: the manager whose node failure this thread handles
_RELAYED: weakref.WeakSet[type] = weakref.WeakSet()


@contextmanager
def failing(relays: Relays) -> Iterator[None]:
    """Upstream's `disconnect_endpoint` calls on this thread are for `relays`' manager."""
    previous = getattr(_FAILING, "relays", None)
    _FAILING.relays = relays
    try:
        yield
    finally:
        _FAILING.relays = previous


def relay_disconnects(cls: type) -> None:
    """Wrap upstream's classmethod `cls.disconnect_endpoint` (where the release has it) so
    that inside `failing(relays)` it runs on that rank's relay endpoint (module doc)."""
    original = vars(cls).get("disconnect_endpoint")
    if not isinstance(original, classmethod) or cls in _RELAYED:
        return
    upstream = original.__func__

    def disconnect_endpoint(klass: Any, endpoint: str) -> None:
        relays = getattr(_FAILING, "relays", None)
        if relays is None:
            upstream(klass, endpoint)
        else:
            relays.disconnect(klass, endpoint, upstream)

    disconnect_endpoint.__doc__ = upstream.__doc__
    cls.disconnect_endpoint = classmethod(disconnect_endpoint)  # type: ignore[attr-defined]
    _RELAYED.add(cls)


_CTX: list[zmq.Context] = []


def _context() -> zmq.Context:
    """The relays' context, one per process (as upstream's class-level one): a manager's
    sockets are closed by `Relays.close`, the context lives as long as upstream's does."""
    if not _CTX:
        _CTX.append(zmq.Context())
    return _CTX[0]


def _names(function: Any) -> tuple[str, ...]:
    code = getattr(function, "__code__", None)
    return code.co_names if code is not None else ()


def _where(function: Any) -> str:
    code = function.__code__
    return f"{code.co_qualname} ({_relative(code.co_filename)}:{code.co_firstlineno})"


def _relative(filename: str) -> str:
    """`<sglang-0.5.15>/sglang/srt/disaggregation/common/conn.py` -> `common/conn.py`."""
    return filename.partition(">/")[2].removeprefix("sglang/srt/disaggregation/") or filename


def hang_is_bug(decide: Callable[..., Observation]) -> Callable[..., Observation]:
    """`decide` (the variant's `DECIDE`) whose runs report a send that never returns as
    that run's verdict: `bug`, the hang's why as the symptom (upstream's scheduler would
    block there; the adapter's bound is only what ended the wait)."""

    def wrapped(lesson_id: str, options: Any, run: Callable[[Any], Observation]) -> Observation:
        return decide(lesson_id, options, lambda opts: _hang_observed(run, opts))

    return wrapped


def _hang_observed(run: Callable[[Any], Observation], options: Any) -> Observation:
    before = len(_GAVE_UP)
    try:
        observed = run(options)
    except SendNeverReturns as exc:
        hang = {"send_never_returns": str(exc)}
        observed = Observation("bug", f"the scheduler would hang: {exc}", [], hang)
    if len(_GAVE_UP) > before:
        why = _GAVE_UP[before]
        symptom = f"the adapter's relay gave up: {why}"
        return Observation("unknown", symptom, observed.timeline, {"gave_up": why})
    return observed
