"""What the decode tells the prefill side, for the simulation: ABORTs, disconnects, sends.

PR #36029 (and #24522 before it) end a request or a prefill with messages and calls
that leave no trace in the decode's own tables: a request its waiting timeout fails
tells each rank it bootstrapped from to drop the room (`ABORT`, once); an aborted
request is failed and recorded, and stays Failed past an answer already on its way; a
metadata send that fails on one rank stops there; a `send_metadata` after a failed init
raises nothing; the heartbeat's failure handler disconnects every rank endpoint the
dead prefill's cache entries named. `NoticeNetwork` is the cluster's `MockNetwork` that
counts what went out (every `ABORT` and metadata message, per endpoint and room, when it
is sent, whatever then happens to it) and refuses a connect on demand (the
`refuse_send` fault); `Notices` checks the invariants of `invariants.py` that read it,
each from the cluster's own steps (`cluster.py` calls it). Only a lesson that checks an
invariant gets the extra calls its check makes (a second `abort()`, a late Success):
other lessons' runs are as before.
"""

from __future__ import annotations

import errno
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import zmq

from reference import wire
from reference.clock import Clock
from reference.status import KVPoll
from reference.transport.base import TransportError
from reference.transport.mock import MockNetwork, MockPushSocket

if TYPE_CHECKING:
    from reference.sim.cluster import Cluster, Request


class ConnectRefused(TransportError, zmq.ZMQError):
    """A connect that fails (zmq's EMFILE, "Too many open files", the failure PR #31766 was
    about), as our transports and as pyzmq raise it: a variant written against either
    catches it where it catches connect or send errors."""

    def __init__(self, endpoint: str) -> None:
        text = f"connect to {endpoint}: Too many open files"
        RuntimeError.__init__(self, text)
        self.errno, self.strerror = errno.EMFILE, text

    def __str__(self) -> str:
        return self.strerror


class NoticeNetwork(MockNetwork):
    """`MockNetwork` that counts the ABORTs and notes the metadata sent, and refuses connects
    to `refused` endpoints (counted as send failures: the request failed on its send)."""

    def __init__(self, clock: Clock, immediate: bool) -> None:
        super().__init__(clock, immediate=immediate)
        self.aborts: Counter[tuple[str, int]] = Counter()  # ABORTs sent, per (endpoint, room)
        self.trail: list[tuple[str, str, int]] = []  # ("refused"|"metadata", endpoint, room), in order
        self.refused: set[str] = set()

    def connect(self, endpoint: str) -> MockPushSocket:
        if endpoint in self.refused:
            self.send_failures += 1
            self.trail.append(("refused", endpoint, -1))
            raise ConnectRefused(endpoint)
        return super().connect(endpoint)

    def deliver(self, endpoint: str, frames: list[bytes]) -> None:
        if frames and frames[0] in (wire.ABORT, wire.METADATA):
            try:
                message = wire.decode(frames)
            except ValueError:
                message = None  # a malformed message tells the rank nothing
            if isinstance(message, wire.Abort):
                self.aborts[(endpoint, message.room)] += 1
            elif isinstance(message, wire.Metadata):
                self.trail.append(("metadata", endpoint, message.room))
        super().deliver(endpoint, frames)


class Notices:
    def __init__(self, cluster: Cluster, net: NoticeNetwork) -> None:
        self.cluster, self.net = cluster, net
        self.seen: list[tuple[str, str]] = []  # (invariant, detail) seen on a heartbeat thread

    def checks(self, invariant: str) -> bool:
        return self.cluster.checking is None or invariant in self.cluster.checking

    # -- dead-prefill-disconnected ----------------------------------------------------------------
    def watch(self, manager: Any) -> None:
        """Look at what the heartbeat's failure handler of `manager` leaves (it runs on the
        heartbeat thread: what it saw is reported by `report`, on the scheduler's)."""
        handle: Callable[[str], None] = manager._handle_node_failure

        def handle_node_failure(addr: str) -> None:
            named = _named(manager, addr)
            disconnected = len(self.net.disconnected)
            handle(addr)
            self._after_failure(manager, addr, named, set(self.net.disconnected[disconnected:]))

        manager._handle_node_failure = handle_node_failure

    def _after_failure(self, manager: Any, addr: str, named: set[str], disconnected: set[str]) -> None:
        c = self.cluster
        p = next((p for p, prefill in enumerate(c.prefills) if prefill.bootstrap_addr == addr), None)
        if p is None or c.down_since[p] is None or not self.checks("dead-prefill-disconnected"):
            return  # judged for a prefill that is dead (its bootstrap server only may be unreachable)
        kept = sorted(named - disconnected)
        still = sorted(named & _named(manager, addr))
        if kept or still:
            self.seen.append(("dead-prefill-disconnected", f"the heartbeat declared prefill {p} dead at "
                              f"{c.clock.now():g} s: of the rank endpoints its cached entries named, "
                              f"{kept or 'none'} not disconnected, {still or 'none'} still cached"))  # fmt: skip

    def report(self) -> None:
        if self.seen:
            self.cluster.broke(*self.seen[0])

    # -- abort-reaches-prefill ----------------------------------------------------------------------
    def timed_out(self, request: Request) -> None:
        """A request its waiting timeout failed told each live rank it bootstrapped from one
        ABORT (a dead one at most one); two aborts after it tell none again."""
        if request.aborted or request.send_returned_at is None or not self.checks("abort-reaches-prefill"):
            return  # an abort, or a send that raised, failed it, not its waiting timeout
        told = self._told(request)
        wrong = {e: n for e, n in told.items() if n > 1 or (n != 1 and self.net.is_bound(e))}
        if wrong:
            self._broke_told(request, "failed on its waiting timeout", wrong)
        for _ in range(2):
            self.cluster.call(request.receiver.abort, f"abort() of room {request.room} after its timeout")
        again = self._told(request)
        if again != told:
            self._broke_told(request, "failed on its waiting timeout and was aborted twice", again)

    def _told(self, request: Request) -> dict[str, int]:
        infos = getattr(request.receiver, "bootstrap_infos", None) or []
        ranks = {f"tcp://{i['rank_ip']}:{i['rank_port']}" for i in infos if i.get("rank_ip") and i.get("rank_port")}
        return {endpoint: self.net.aborts[(endpoint, request.room)] for endpoint in sorted(ranks)}

    def _broke_told(self, request: Request, what: str, told: dict[str, int]) -> None:
        shown = ", ".join(f"{e.removeprefix('tcp://')} {n}" for e, n in told.items())
        self.cluster.broke("abort-reaches-prefill", f"room {request.room} on decode {request.manager} {what}; "
                           f"ABORTs per prefill rank it bootstrapped from: {shown}")  # fmt: skip

    # -- aborted-stays-failed -------------------------------------------------------------------------
    def aborted(self, request: Request) -> None:
        """Once the scheduler's abort() returned: a failure recorded and Failed in the table; a
        second abort() tells no rank again; then the Success of an answer already on its way
        lands (the decode inbox's write), and every later poll must still read Failed."""
        manager, room = self.cluster.managers[request.manager], request.room
        if self.checks("aborted-stays-failed"):
            recorded = room in getattr(manager, "failure_records", {})
            status = manager.request_status.get(room)
            if not recorded or status != KVPoll.Failed:
                shown = "absent" if status is None else KVPoll(status).name
                self.cluster.broke("aborted-stays-failed", f"room {room} on decode {request.manager} was "
                                   f"aborted: failure recorded {recorded}, status {shown}")  # fmt: skip
        if self.checks("abort-reaches-prefill"):
            told = self._told(request)
            self.cluster.call(request.receiver.abort, f"a second abort() of room {room}")
            again = self._told(request)
            if any(n > 1 for n in again.values()) or any(again[e] > n for e, n in told.items() if n):
                self._broke_told(request, "was aborted twice", again)
        if self.checks("aborted-stays-failed"):
            self.cluster.note("status thread", f"update_status(room {room}, Success): a late answer")
            self.cluster.call(lambda: manager.update_status(room, KVPoll.Success), f"late Success of room {room}")

    def polled(self, request: Request, status: Any) -> None:
        if request.aborted and status != KVPoll.Failed and self.checks("aborted-stays-failed"):
            shown = "None" if status is None else KVPoll(status).name
            self.cluster.broke("aborted-stays-failed", f"room {request.room} on decode {request.manager} was "
                               f"aborted and polls {shown}")  # fmt: skip

    # -- send-after-failed-init -------------------------------------------------------------------------
    def send_after_failed_init(self, request: Request, pages: list[int]) -> None:
        """`send_metadata` on a receiver whose init failed raises nothing; the room stays Failed
        with its failure recorded."""
        if not self.checks("send-after-failed-init"):
            return
        c, manager, room = self.cluster, self.cluster.managers[request.manager], request.room
        c.note(f"decode {request.manager}", f"send_metadata room {room} after its init failed")
        try:
            request.receiver.send_metadata(list(pages))
        except Exception as exc:  # what the scheduler would get from its call
            c.broke("send-after-failed-init", f"send_metadata of room {room} after its init failed raised "
                    f"{type(exc).__name__}: {exc}")  # fmt: skip
        status = manager.request_status.get(room)
        if status != KVPoll.Failed or room not in getattr(manager, "failure_records", {}):
            shown = "absent" if status is None else KVPoll(status).name
            c.broke("send-after-failed-init", f"send_metadata of room {room} after its init failed left it "
                    f"{shown}, failure recorded {room in getattr(manager, 'failure_records', {})}")  # fmt: skip

    # -- send-failure-stops-sends: the refuse_send fault ---------------------------------------------------
    def refuse_send(self, m: int, p: int, rank: int) -> None:
        """A new request on prefill `p` inits; one of its ranks' connects is refused while the
        scheduler sends its metadata and polls it: no rank is sent the metadata after the
        refusal, and the poll does not read Success."""
        c = self.cluster
        endpoints = c.prefills[p].endpoints
        if c._gone(p) or not endpoints:
            return
        request = c.open_request(m, p, None)
        if request is None:
            return
        c.init(request)
        refused = endpoints[rank % len(endpoints)]
        c.note(f"prefill {p}", f"connects to rank {rank % len(endpoints)} ({refused}) are refused (EMFILE)")
        start = len(self.net.trail)
        self.net.refused.add(refused)
        try:
            c.send(request)
            status = c.call(request.receiver.poll, f"poll of room {request.room}") if request.sent else None
        finally:
            self.net.refused.discard(refused)
        trail = self.net.trail[start:]
        if ("refused", refused, -1) not in trail:
            return
        after = trail[trail.index(("refused", refused, -1)) :]
        sent = [e for what, e, room in after if what == "metadata" and room == request.room]
        if (sent or status == KVPoll.Success) and self.checks("send-failure-stops-sends"):
            shown = "None" if status is None else KVPoll(status).name
            c.broke("send-failure-stops-sends", f"room {request.room}'s connect to {refused} was refused at its "
                    f"send: metadata sent after it to {sent or 'none'}; its poll then read {shown}")  # fmt: skip
        c.poll(request)


def _named(manager: Any, addr: str) -> set[str]:
    """The rank endpoints named by `manager`'s cache entries for prefill `addr`."""
    entries = [infos for key, infos in list(manager.connection_pool.items()) if key.startswith(f"{addr}_")]
    return {f"tcp://{i['rank_ip']}:{i['rank_port']}" for infos in entries for i in infos
            if isinstance(i, dict) and i.get("rank_ip") and i.get("rank_port")}  # fmt: skip
