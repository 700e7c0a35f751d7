"""A steady request stream around a prefill restart, recorded per request.

Each decode receiver slot runs on its own thread and opens one request every
1/rate seconds (staggered between slots, so the aggregate stream is even); a request
that blocks delays only its own slot's next one, as a decode scheduler would. The main
thread restarts the prefill at a known instant and keeps the stream going for the
horizon. What a request does is given by the `System` under test, so the driver knows
nothing about receivers or transports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from benchmarks.recovery_metrics import Request

JOIN_BOUND = 10.0  # real seconds a slot may take to finish its last request


@dataclass(frozen=True)
class Outcome:
    ok: bool
    key: str  # the receiver's cache key (bootstrap_key) the request used
    ports: tuple[int, ...] = ()  # the prefill rank ports it sent to (none if the route fetch failed)
    detail: str = ""


class System(Protocol):
    def request(self, slot: int) -> Outcome:
        """One whole request from decode slot `slot`: set-up, metadata, wait for the KV."""
        ...

    def restart(self) -> Callable[[], float | None]:
        """Restart the prefill now; return a probe: perf_counter time it re-registered, or None."""
        ...


@dataclass(frozen=True)
class StreamConfig:
    receivers: int
    rate: float  # requests per second per receiver
    before: float  # seconds of stream before the restart
    horizon: float  # seconds of stream after the restart


def _slot(system: System, slot: int, config: StreamConfig, start: float, stop: threading.Event, out: list):
    period = 1.0 / config.rate
    next_at = start + period * slot / config.receivers
    while not stop.is_set():
        delay = next_at - time.perf_counter()
        if delay > 0 and stop.wait(delay):
            break
        sent = time.perf_counter()
        try:
            outcome = system.request(slot)
        except Exception as exc:  # a request must never kill the stream; record it as failed
            outcome = Outcome(False, "?", detail=f"{type(exc).__name__}: {exc}")
        out.append((slot, outcome, sent, time.perf_counter()))
        next_at = max(next_at + period, time.perf_counter())


def run_stream(system: System, config: StreamConfig) -> tuple[list[Request], float | None]:
    """Run the stream, restart the prefill `before` seconds in; times relative to the restart."""
    stop = threading.Event()
    raw: list = []
    start = time.perf_counter()
    threads = [
        threading.Thread(target=_slot, args=(system, i, config, start, stop, raw), name=f"decode-slot-{i}")
        for i in range(config.receivers)
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(config.before)  # a real-time benchmark: the stream runs on the wall clock
        restart_at = time.perf_counter()
        registered = system.restart()
        time.sleep(max(0.0, restart_at + config.horizon - time.perf_counter()))
    finally:
        stop.set()
        for thread in threads:
            thread.join(JOIN_BOUND)
    registered_at = registered()
    requests = [
        Request(
            slot,
            o.key,
            sent - restart_at,
            done - restart_at,
            "success" if o.ok else "failed",
            o.ports,
            o.detail,
        )
        for slot, o, sent, done in sorted(raw, key=lambda r: r[2])
        if sent - restart_at <= config.horizon
    ]
    return requests, None if registered_at is None else registered_at - restart_at
