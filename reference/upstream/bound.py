"""Stand-ins for what a loaded upstream file reaches through its own globals, bound per call.

Upstream's `common/conn.py` reads wall time (`time.time()`: the waiting timeout, the
bootstrap server's entry timestamps), talks HTTP with `requests` (`GET /route`),
makes its server's event loop with `asyncio.new_event_loop()`, paces the server's
cleanup with `asyncio.sleep`, and logs with `logger.warning_once` (a method sglang gets
from transformers, which patches `logging.Logger`). A scenario needs those on its own
terms: the virtual clock, its transport, its `JumpLoop` and tick source. Upstream's own
unit test does the same for one call (it patches `common.conn.time.time`).

`install(module)` replaces the globals `time`, `requests`, `asyncio`, `threading` and
`logger` of a loaded module with the objects below (a thread upstream starts runs under
its creator's binding; `time.sleep` and `GET /health` are the bound clock's and
transport's, for upstream's own heartbeat loop: a transport that scripts its `/health`
answers gives their status, and a late connect or answer times out under upstream's own
`timeout` argument; `requests.put`, a prefill manager's `PUT /route` registration, is the
bound `put`'s answer). The stand-in `get_disagg()` (`standins.py`) reads the binding too:
a named configuration's settings (`configs.py`, `prefill_complete`) for the calls made
under it. Each asks the calling thread's binding (set by
the adapter with `bound(...)` around its calls into upstream code, and on the
bootstrap server's thread for its whole life) and, where nothing is bound, does what
the real module does. Everything else on them is the real module's attribute.
Everything here is adapter code; no upstream code is changed.
"""

from __future__ import annotations

import asyncio as real_asyncio
import json
import logging
import threading
import time as real_time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests as real_requests

from reference.transport.base import TransportError

_local = threading.local()


@dataclass(frozen=True)
class Binding:
    now: Callable[[], float] | None = None  # upstream's time.time()
    transport: Any = None  # upstream's GET /route
    loop: real_asyncio.AbstractEventLoop | None = None  # upstream's asyncio.new_event_loop()
    ticks: Any = None  # upstream's asyncio.sleep in the server's cleanup: ticks.next_tick()
    on_sleep: Callable[[], None] | None = None  # called after each such sleep (counts rounds)
    # The keys this version's PrefillServerInfo has: the parallel info (GET /route with
    # every rank -1) is answered with those only, as that version's server would.
    info_fields: frozenset[str] | None = None
    sleep: Callable[[float], None] | None = None  # upstream's time.sleep (the heartbeat's pace)
    # upstream's get_disagg() (standins.py): a named configuration's disaggregation settings
    # (configs.py, e.g. the decode allocation policy); None: upstream's defaults
    disagg: Any = None
    # upstream's envs.X.get() (standins.py): a configuration's settings over upstream's defaults
    env: dict[str, Any] | None = None
    # upstream's requests.put (a prefill's PUT /route to its bootstrap server): answers a
    # (url, json payload) with an HTTP status; None: the real requests.put
    put: Callable[[str, Any], int] | None = None


def current() -> Binding:
    return getattr(_local, "binding", None) or Binding()


@contextmanager
def bound(**values: Any) -> Iterator[None]:
    """Bind `values` (fields of `Binding`) for upstream calls made on this thread."""
    previous = getattr(_local, "binding", None)
    _local.binding = Binding(**{**(previous or Binding()).__dict__, **values})
    try:
        yield
    finally:
        _local.binding = previous


class LoopTimeLike:
    """A `time` or `asyncio` an adapter already gave a loaded file (the DP dispatcher's)."""


class ClockedTime:
    """`time` for a loaded module: `time()` reads the bound clock."""

    def time(self) -> float:
        now = current().now
        return now() if now is not None else real_time.time()

    def sleep(self, seconds: float) -> None:
        sleep = current().sleep
        if sleep is not None:
            sleep(seconds)
        else:
            real_time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(real_time, name)


class _Response:
    def __init__(self, status: int, body: Any) -> None:
        self.status_code = status
        self._body = body
        self.text = body if isinstance(body, str) else json.dumps(body)

    def json(self) -> Any:
        return self._body if not isinstance(self._body, str) else json.loads(self._body)


def _get(url: str, real: Callable[..., Any], **kwargs: Any) -> Any:
    transport = current().transport
    if transport is None:
        return real(url, **kwargs)
    parts = urlsplit(url)
    if parts.path == "/health":  # upstream's heartbeat probe
        return _health(url, transport, parts.netloc, kwargs.get("timeout"))
    if parts.path != "/route":
        raise TransportError(f"the upstream adapter routes only GET /route and /health, not GET {parts.path}")
    params = {key: int(value) for key, value in parse_qsl(parts.query)}
    try:
        reply = transport.get_route(parts.netloc, params)
    except TransportError as exc:
        raise real_requests.ConnectionError(str(exc)) from None
    fields = current().info_fields
    body = reply.body
    if fields is not None and isinstance(body, dict) and set(params.values()) == {-1}:
        body = {key: value for key, value in body.items() if key in fields}
    return _Response(reply.status, body)


def _health(url: str, transport: Any, addr: str, timeout: Any) -> _Response:
    """`GET /health`: a dead prefill refuses the connection. A transport that scripts its
    answers (`health_answer(addr)`: a status, and how long the connect and the answer would
    take; None when refused) gets upstream's own `timeout` applied as requests applies it
    (a number for both, or `(connect, read)`); any other answers 200 or refuses."""
    answer = getattr(transport, "health_answer", None)
    if answer is None:  # a transport that knows only up or down
        if not transport.health(addr):
            raise real_requests.ConnectionError(f"GET {url}: connection refused")
        return _Response(200, "OK")
    got = answer(addr)
    if got is None:
        raise real_requests.ConnectionError(f"GET {url}: connection refused")
    connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
    if connect is not None and got.connect > connect:
        raise real_requests.ConnectTimeout(f"GET {url}: connect timed out after {connect} s")
    if read is not None and got.read > read:
        raise real_requests.ReadTimeout(f"GET {url}: read timed out after {read} s")
    return _Response(got.status, "OK" if got.status == 200 else "unhealthy")


class _Session:
    """`requests.Session` for a loaded module: GETs go through the bound transport."""

    def __init__(self) -> None:
        self._real: real_requests.Session | None = None

    def _session(self) -> real_requests.Session:
        if self._real is None:
            self._real = real_requests.Session()
        return self._real

    def mount(self, *_args: Any) -> None:
        """Connection pooling is the transport's business."""

    def get(self, url: str, **kwargs: Any) -> Any:
        return _get(url, lambda u, **k: self._session().get(u, **k), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session(), name)


class TransportRequests:
    """`requests` for a loaded module: `get` and sessions' `get` use the bound transport."""

    Session = _Session
    adapters = SimpleNamespace(HTTPAdapter=lambda *_a, **_k: None)

    def get(self, url: str, **kwargs: Any) -> Any:
        return _get(url, real_requests.get, **kwargs)

    def put(self, url: str, **kwargs: Any) -> Any:
        put = current().put
        if put is None:
            return real_requests.put(url, **kwargs)
        return _Response(put(url, kwargs.get("json")), "OK")

    def __getattr__(self, name: str) -> Any:
        return getattr(real_requests, name)


class TickedAsyncio:
    """`asyncio` for a loaded module: the bound loop and tick source where one is bound."""

    def new_event_loop(self) -> real_asyncio.AbstractEventLoop:
        loop = current().loop
        return loop if loop is not None else real_asyncio.new_event_loop()

    async def sleep(self, delay: float, result: Any = None) -> Any:
        binding = current()
        if delay <= 0 or binding.ticks is None:
            await real_asyncio.sleep(delay)
        else:
            await binding.ticks.next_tick()
        if delay > 0 and binding.on_sleep is not None:
            binding.on_sleep()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(real_asyncio, name)


class Stopped(BaseException):
    """Raised by a bound `sleep` once the adapter stops the thread's owner: it ends one of
    upstream's `while True` loops (its heartbeat) the way a process exit would."""


class _BindingThread(threading.Thread):
    """`threading.Thread` for a loaded module: the thread runs under its creator's binding
    (upstream's heartbeat thread gets the scenario's clock and transport)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._binding = current()

    def run(self) -> None:
        _local.binding = self._binding
        with suppress(Stopped):
            super().run()


class BindingThreading:
    """`threading` for a loaded module: its `Thread` inherits the creator's binding."""

    Thread = _BindingThread

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)


class OnceLogger(logging.LoggerAdapter):
    """The module's logger plus `warning_once` (sglang gets it from transformers)."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})
        self._said: set[str] = set()

    def warning_once(self, msg: str, *args: Any, **kwargs: Any) -> None:
        if msg not in self._said:
            self._said.add(msg)
            self.warning(msg, *args, **kwargs)


def install(module: ModuleType) -> None:
    """Replace the loaded module's `time`, `requests`, `asyncio` and `logger` globals."""
    if not isinstance(getattr(module, "time", None), LoopTimeLike):
        module.time = ClockedTime()  # type: ignore[attr-defined]
    module.requests = TransportRequests()  # type: ignore[attr-defined]
    if getattr(module, "threading", None) is threading:
        module.threading = BindingThreading()  # type: ignore[attr-defined]
    if not isinstance(getattr(module, "asyncio", None), LoopTimeLike):
        module.asyncio = TickedAsyncio()  # type: ignore[attr-defined]
    logger = getattr(module, "logger", None)
    if isinstance(logger, logging.Logger):
        module.logger = OnceLogger(logger)  # type: ignore[attr-defined]
