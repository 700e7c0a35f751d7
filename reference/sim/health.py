"""What the heartbeats probed and declared: misses in a row, and the threads they run in.

The heartbeat that calls the failure handler PR #36351 fixed probes each prefill with
`GET /health`, `timeout=(2, 3)`, and counts a miss for anything but a 200 in time: a
refused connection, an error status (a prefill that is up but unhealthy answers 503), a
connect later than 2 s or an answer later than 3 s. `heartbeat_max_failures` misses in a
row declare the prefill dead (`_handle_node_failure(addr)`); a 200 resets the count.

`HeartbeatWatch` sees every probe the network answers (`HealthNetwork.on_probe`, on the
probing thread) and every call of each manager's `_handle_node_failure` (wrapped on the
instance), and counts, per thread and address, the misses in a row since its last 200.
Invariant `dead-only-after-misses-in-a-row`: a thread calls the handler for an address only
once it missed that many in a row (upstream does not reset the count when it declares: a
re-registered prefill's first miss declares it again), and a thread whose probes reach that
count since its last 200 or its last call calls it in the same round (the probes of one
virtual instant). And, for invariant `threads-alive`: every thread the cluster's set-up
started (the managers' heartbeats) is a daemon. Problems seen on a heartbeat thread are kept and raised
from the scheduler's thread (`problems`): a raise there would end the heartbeat instead.

`unhealthy`: the fault that scripts a prefill's next four answers to each heartbeat
(`HealthNetwork.script`): a pattern of misses, 503, a connect after 2.5 s or an answer after
3.5 s in turn (each within a second of upstream's timeouts, so a timeout that grew by
one is seen), and 200s, once nothing is in flight to it (and, in a run with it on, each
prefill's first answer to each heartbeat: `first_misses`). The prefill is unwell meanwhile: its
ranks lose what is sent to them until its probes are over (`mute`), so no answer of theirs
lands after the heartbeat failed their rooms. A live prefill declared dead whose answers
still arrive is what residual lessons are about (bootstrap-partition; failure-records: a
late Success lifting a Failed room keeps its failure record in upstream's code), not this one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from reference.clock import Clock
from reference.transport.mock import Answer, HealthNetwork

MISSES = (Answer(503), Answer(connect=2.5), Answer(read=3.5))
# The misses (bits, first probe lowest) of the four answers an `unhealthy` step scripts, the one
# that tells most first (Hypothesis draws small numbers most): a single miss, a 200, then two in a
# row (a heartbeat that does not reset its count declares at the third; one that takes either of
# the last two kinds for a 200 does not declare at the fourth).
PATTERNS = (0b1101, 0b0011, 0b0101, 0b1111, 0b0110, 0b0001, 0b1010)
PROBES = 4
IN_A_ROW = "dead-only-after-misses-in-a-row"


class HeartbeatWatch:
    def __init__(self, net: HealthNetwork, clock: Clock, max_failures: int, note: Callable[[str, str], None]):
        self.clock, self.max_failures, self.note = clock, max_failures, note
        self.since_200: dict[tuple[int, str], int] = {}  # (thread, addr) -> misses since its last 200
        self.since_call: dict[tuple[int, str], int] = {}  # ... since its last 200 or handler call
        self.owed: dict[int, tuple[float, set[str]]] = {}  # thread -> (its round, addrs to declare dead)
        self.heartbeats: dict[int, int] = {}  # heartbeat thread -> its manager
        self.problems: list[tuple[str, str]] = []
        net.on_probe = self._probed

    @contextmanager
    def starting(self, m: int, manager: Any) -> Iterator[None]:
        """Around `start_heartbeat`: its threads are manager `m`'s, its handler calls watched."""
        handle = getattr(manager, "_handle_node_failure", None)
        if handle is not None:
            manager._handle_node_failure = self._watched(m, handle)
        before = set(threading.enumerate())
        yield
        for thread in set(threading.enumerate()) - before:
            self.heartbeats[thread.ident or 0] = m

    def _who(self) -> str:
        m = self.heartbeats.get(threading.get_ident())
        return "a thread" if m is None else f"decode {m}'s heartbeat"

    def _probed(self, addr: str, answer: Answer | None) -> None:
        now, me = self.clock.now(), threading.get_ident()
        self._settle(lambda round_at: round_at < now, me)
        key = (me, addr)
        if answer is not None and not answer.missed:
            self.since_200[key] = self.since_call[key] = 0
            return
        self.since_200[key] = self.since_200.get(key, 0) + 1
        self.since_call[key] = self.since_call.get(key, 0) + 1
        self.note("heartbeat", f"{self._who()}: GET {addr}/health -> {answer or 'refused'} (miss "
                  f"{self.since_200[key]} in a row)")  # fmt: skip
        if self.since_call[key] >= self.max_failures:
            self.owed.setdefault(me, (now, set()))[1].add(addr)

    def _watched(self, m: int, handle: Callable[[str], Any]) -> Callable[[str], Any]:
        def _handle_node_failure(addr: str) -> Any:
            me = threading.get_ident()
            misses = self.since_200.get((me, addr), 0)
            self.note("heartbeat", f"decode {m}: _handle_node_failure({addr}) after {misses} misses in a row")
            if misses < self.max_failures:
                self.problems.append((IN_A_ROW, f"decode {m} declared {addr} "
                                      f"dead after {misses} missed /health probe(s) in a row (since its last "
                                      f"200): it takes {self.max_failures}"))  # fmt: skip
            self.since_call[(me, addr)] = 0
            self.owed.get(me, (0.0, set()))[1].discard(addr)
            return handle(addr)

        return _handle_node_failure

    def _settle(self, due: Callable[[float], bool], thread: int | None = None) -> None:
        for me, (round_at, addrs) in list(self.owed.items()):
            if (thread is None or me == thread) and due(round_at):
                del self.owed[me]
                who = f"decode {self.heartbeats.get(me)}'s heartbeat"
                for addr in sorted(addrs):
                    missed = f"{who} missed {self.max_failures} /health probes of {addr} in a row"
                    self.problems.append((IN_A_ROW, f"{missed} at {round_at:g} s and did not declare it dead "
                                          "(no _handle_node_failure call)"))  # fmt: skip

    def settled(self) -> list[tuple[str, str]]:
        """Every problem so far; called between steps, with every heartbeat parked (its round over)."""
        self._settle(lambda _round_at: True)
        problems, self.problems = self.problems, []
        return problems

    def non_daemons(self, before: set[threading.Thread]) -> list[str]:
        return [t.name for t in threading.enumerate() if t not in before and not t.daemon]


def unhealthy(c: Any, p: int, kind: int, pattern: int, poll_all: Callable[[], None]) -> None:
    """The `unhealthy` step on cluster `c`'s prefill `p`: a heartbeat interval for what is in
    flight to land (and a scheduler pass); then, unless a request still waits on it, its next
    four answers to each heartbeat scripted for the next four and a half heartbeat intervals
    (PATTERNS[pattern] says which are misses, the others are 200s; the misses take the kinds
    of MISSES in turn, from `kind`: two in a row are two kinds) and its ranks muted as long,
    which the step lets pass."""
    interval, prefill = c.managers[0].config.heartbeat_interval, c.prefills[p]
    c.advance(interval, "unhealthy: what is in flight lands first")
    poll_all()
    if any(r.prefill == p and r.sent for r in c.open):
        c.note(f"prefill {p}", "stays healthy: a request still waits on it")
        return
    bits = PATTERNS[pattern % len(PATTERNS)]
    kinds = iter(range(kind, kind + PROBES))
    answers = [MISSES[next(kinds) % len(MISSES)] if bits >> i & 1 else Answer() for i in range(PROBES)]
    window = (PROBES + 0.5) * interval  # each heartbeat's next four probes: then it is well again
    until = c.clock.now() + window
    c.net.script(prefill.bootstrap_addr, answers, until)
    for endpoint in prefill.endpoints:
        c.net.mute(endpoint, until)
    c.note(f"prefill {p}", f"its next /health answers: {', '.join(map(str, answers))}; its ranks lose their "
           "messages meanwhile")  # fmt: skip
    c.advance(window, "unhealthy")  # its probes, before anything heals them
    poll_all()


def first_misses(net: HealthNetwork, addrs: list[str]) -> None:
    """A run with `unhealthy` on: each prefill's first answer to each heartbeat is a miss (of
    the kinds in turn), before any 200 (a heartbeat that counts the first miss twice declares)."""
    for p, addr in enumerate(addrs):
        net.script(addr, [MISSES[p % len(MISSES)]])
