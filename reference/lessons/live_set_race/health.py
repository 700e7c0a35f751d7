"""What counts as a missed `/health` probe: an error status and a late answer too.

The heartbeat that calls the failure handler PR #36351 fixed probes each prefill with
`GET /health`, `timeout=(2, 3)` (2 s to connect, 3 s to answer), and counts a miss for
anything but a 200 in time: a refused connection, an error status (a prefill that is up
but unhealthy answers 503), a connect or an answer later than those timeouts. Misses in
a row (`heartbeat_max_failures`) declare the prefill dead; a 200 resets the count.

`heartbeat_is_daemon`: the thread that loop runs in never keeps the process alive.

`HealthNetwork` is the mock network whose prefills answer each probe as scripted
(`Answer`: a status, and how long the connect and the answer would take), one answer per
probe, then 200. A variant on our transport asks `health(addr)` (True: a 200 within the
probe's timeouts, as the loopback transport's `GET /health` with `timeout=(2, 3)`); the
upstream adapter asks `health_answer(addr)` and applies upstream's own `timeout`
argument to it (`reference/upstream/bound.py`). A late answer costs no virtual time: the
probe gives up at its timeout, the heartbeat's schedule is its sleep.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from reference.clock import VirtualClock
from reference.harness.capture import thread_errors
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.live_set_race.race import build, not_failed, status_of
from reference.transport.mock import MockNetwork

PROBE_TIMEOUT = (2.0, 3.0)  # the decode's GET /health: seconds to connect, then to answer


@dataclass(frozen=True)
class Answer:
    status: int = 200
    connect: float = 0.0  # seconds until the prefill's server accepts the connection
    read: float = 0.0  # seconds from then until it answers

    def __str__(self) -> str:
        late = [
            f"{what} after {s:g} s" for what, s in (("connects", self.connect), ("answers", self.read)) if s
        ]
        return f"{self.status}" + (f" ({', '.join(late)})" if late else "")


class HealthNetwork(MockNetwork):
    """The mock network with scripted `/health` answers (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self._answers: defaultdict[str, deque[Answer]] = defaultdict(deque)

    def script(self, addr: str, answers: Iterable[Answer]) -> None:
        self._answers[addr].extend(answers)

    def health_answer(self, addr: str) -> Answer | None:
        """The next probe's answer; None: the connection is refused (the prefill is gone)."""
        self.health_probes += 1
        if addr not in self._alive:
            return None
        scripted = self._answers[addr]
        return scripted.popleft() if scripted else Answer()

    def health(self, addr: str) -> bool:
        answer = self.health_answer(addr)
        connect, read = PROBE_TIMEOUT
        return (
            answer is not None and answer.status == 200 and answer.connect <= connect and answer.read <= read
        )


A, B = "10.0.2.1:8998", "10.0.2.2:8998"
LATE_CONNECT, LATE_ANSWER = Answer(connect=2.5), Answer(read=3.5)
UNHEALTHY = Answer(503)
OK = Answer()
# Per probe: single misses first (tolerated), then two in a row (dead), each kind of miss.
SCRIPT = {
    A: (UNHEALTHY, OK, UNHEALTHY, OK, LATE_CONNECT, UNHEALTHY),
    B: (OK, OK, OK, OK, LATE_ANSWER, UNHEALTHY),
}
TOLERATED = 4  # probes of single misses


def _show(answers: Iterable[Answer]) -> str:
    return ", ".join(map(str, answers))


def unhealthy_answers_miss(variant: ModuleType, _options: Options) -> Observation:
    clock, net = VirtualClock(), HealthNetwork()
    for addr, answers in SCRIPT.items():
        net.add_prefill(addr)
        net.script(addr, answers)
    with thread_errors() as errors:
        _hooks, manager, prefills = build(variant, net, {A: (2, 0, 0), B: (2, 0, 0)}, clock)
        interval = manager.config.heartbeat_interval
        manager.start_heartbeat()
        try:
            clock.wait_for_sleepers(1)
            clock.advance(interval * TOLERATED)
            early = {p.addr: [r for r in p.in_flight if status_of(manager, r) == "Failed"] for p in prefills}
            clock.advance(interval * (len(SCRIPT[A]) - TOLERATED))
            late = {p.addr: not_failed(manager, p) for p in prefills}
        finally:
            manager.close()
    problems = [f"thread died: {errors.describe()}"] if errors.errors else []
    problems += [
        f"single misses (answers {_show(SCRIPT[addr][:TOLERATED])}) declared {addr} dead: {rooms} Failed"
        for addr, rooms in early.items()
        if rooms
    ]
    problems += [
        f"two misses in a row ({_show(SCRIPT[addr][TOLERATED:])}) left {addr}'s rooms {rooms} un-failed"
        for addr, rooms in late.items()
        if rooms
    ]
    if problems:
        return Observation("bug", "; ".join(problems))
    return Observation(
        "ok",
        f"503 answers and answers later than the probe's {PROBE_TIMEOUT[0]:g} s / {PROBE_TIMEOUT[1]:g} s "
        "timeouts count as misses: single ones tolerated, two in a row failed the prefill's rooms",
    )


def heartbeat_is_daemon(variant: ModuleType, _options: Options) -> Observation:
    """The heartbeat thread a manager starts is a daemon: it never keeps the decode's
    process alive once its main thread exits (threads compared before and after
    `start_heartbeat`, on the virtual clock)."""
    clock, net = VirtualClock(), MockNetwork()
    net.add_prefill(A)
    with thread_errors():
        _hooks, manager, _prefills = build(variant, net, {A: (1, 0, 0)}, clock)
        before = set(threading.enumerate())
        manager.start_heartbeat()
        try:
            clock.wait_for_sleepers(1)
            started = [t for t in threading.enumerate() if t not in before]
        finally:
            manager.close()
    if not started:
        return Observation("unknown", "start_heartbeat started no thread")
    kept = [t.name for t in started if not t.daemon]
    if kept:
        return Observation(
            "bug", f"the heartbeat's thread {', '.join(kept)} is not a daemon: it keeps the process alive"
        )
    return Observation("ok", f"the heartbeat's {len(started)} thread(s) are daemons")
