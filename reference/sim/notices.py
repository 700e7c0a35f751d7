"""What the decode tells the prefill side, for the simulation: ABORTs, disconnects, sends.

PR #36029 (and #24522 before it) end a request or a prefill with messages and calls
that leave no trace in the decode's own tables: a request its waiting timeout fails
tells each rank it bootstrapped from to drop the room (`ABORT`, once); an aborted
request is failed and recorded, and stays Failed past an answer already on its way; a
metadata send that fails on one rank stops there; a `send_metadata` after a failed init
raises nothing; the heartbeat's failure handler disconnects every rank endpoint the
dead prefill's cache entries named. `NoticeNetwork` is the cluster's `HealthNetwork` that
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
from collections.abc import Callable, Mapping
from typing import Any

import zmq

from reference import wire
from reference.clock import Clock
from reference.sim.request import Request
from reference.status import KVPoll
from reference.transport.base import Reply, TransportError
from reference.transport.mock import HealthNetwork, MockPushSocket


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


class NoticeNetwork(HealthNetwork):
    """The simulation's network: scripted `/health` answers (`HealthNetwork`); it counts the
    ABORTs, notes the metadata sent, and refuses connects to `refused` endpoints (counted as
    send failures: the request failed on its send)."""

    def __init__(self, clock: Clock, immediate: bool) -> None:
        super().__init__(clock, immediate=immediate)
        self.aborts: Counter[tuple[str, int]] = Counter()  # ABORTs sent, per (endpoint, room)
        self.trail: list[tuple[str, str, int]] = []  # ("refused"|"metadata", endpoint, room), in order
        self.refused: set[str] = set()
        self.refused_routes: set[str] = set()  # bootstrap addresses whose rank routes are refused
        self._metadata_to: dict[tuple[str, int], Any] = {}  # (endpoint, room) -> the process sent to

    def holds_metadata(self, endpoint: str, room: int) -> bool:
        """Whether the process bound at `endpoint` now is the one `room`'s metadata was sent to."""
        sent_to = self._metadata_to.get((endpoint, room))
        with self._lock:
            return sent_to is not None and self._endpoints.get(endpoint) is sent_to

    def connect(self, endpoint: str) -> MockPushSocket:
        if endpoint in self.refused:
            self.send_failures += 1
            self.trail.append(("refused", endpoint, -1))
            raise ConnectRefused(endpoint)
        return super().connect(endpoint)

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        if bootstrap_addr in self.refused_routes and int(params.get("target_tp_rank", -1)) >= 0:
            raise TransportError(f"GET http://{bootstrap_addr}/route: connection refused")
        return super().get_route(bootstrap_addr, params)

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
                with self._lock:
                    self._metadata_to[(endpoint, message.room)] = self._endpoints.get(endpoint)
        super().deliver(endpoint, frames)


class Notices:
    def __init__(self, cluster: Any, net: NoticeNetwork) -> None:  # the `Cluster` (which imports this)
        self.cluster, self.net = cluster, net
        self.seen: list[tuple[str, str]] = []  # (invariant, detail) seen on a heartbeat thread

    def checks(self, invariant: str) -> bool:
        return self.cluster.checking is None or invariant in self.cluster.checking

    def drives(self, invariant: str) -> bool:
        """Whether the run makes the calls `invariant`'s check adds: only for a lesson that names
        it (a run that checks every invariant, restart-recovery's among them, makes none)."""
        return self.cluster.checking is not None and invariant in self.cluster.checking

    def report(self) -> None:
        """Raise what a heartbeat thread saw, on the scheduler's thread."""
        if self.seen:
            self.cluster.broke(*self.seen[0])

    # -- dead-prefill-disconnected ----------------------------------------------------------------
    def watch(self, manager: Any) -> None:
        """Look at what the heartbeat's failure handler of `manager` leaves."""
        handle: Callable[[str], None] = manager._handle_node_failure

        def handle_node_failure(addr: str) -> None:
            named, start = _named(manager, addr), len(self.net.disconnected)
            handle(addr)
            self._after_failure(manager, addr, named, set(self.net.disconnected[start:]))

        manager._handle_node_failure = handle_node_failure

    def _after_failure(self, manager: Any, addr: str, named: set[str], disconnected: set[str]) -> None:
        c = self.cluster
        p = next((p for p, prefill in enumerate(c.prefills) if prefill.bootstrap_addr == addr), None)
        if p is None or c.down_since[p] is None or not self.checks("dead-prefill-disconnected"):
            return  # judged for a dead prefill (a live one's bootstrap server may be unreachable)
        kept, still = sorted(named - disconnected), sorted(named & _named(manager, addr))
        if kept or still:
            detail = (f"the heartbeat declared prefill {p} dead at {c.clock.now():g} s: of the rank "
                      f"endpoints its cached entries named, {kept or 'none'} not disconnected, "
                      f"{still or 'none'} still cached")  # fmt: skip
            self.seen.append(("dead-prefill-disconnected", detail))

    # -- abort-reaches-prefill ----------------------------------------------------------------------
    def timed_out(self, request: Request) -> None:
        """A request its waiting timeout failed told each rank it bootstrapped from whose
        process took its metadata (the same process still bound there) one ABORT, any other
        at most one; two aborts after it tell none again. A process that restarted on the same
        port never heard of the room (upstream's socket to the dead one may not reach it)."""
        raised = request.send_returned_at is None  # a send that raised failed it
        if request.aborted or raised or not self.drives("abort-reaches-prefill"):
            return  # an abort, or a send that raised, failed it: not its waiting timeout
        told = self._told(request)
        if any(n > 1 or (n != 1 and self.net.holds_metadata(e, request.room)) for e, n in told.items()):
            self._broke_told(request, "failed on its waiting timeout", told)
        for _ in range(2):
            self.cluster.call(request.receiver.abort, f"abort() of room {request.room} after its timeout")
        if self._told(request) != told:
            self._broke_told(request, "timed out, then was aborted twice", self._told(request))

    def _told(self, request: Request) -> dict[str, int]:
        """ABORTs for the request's room per rank endpoint it bootstrapped from."""
        infos = getattr(request.receiver, "bootstrap_infos", None) or []
        ranks = {_endpoint(info) for info in infos} - {""}
        return {endpoint: self.net.aborts[(endpoint, request.room)] for endpoint in sorted(ranks)}

    def _broke_told(self, request: Request, what: str, told: dict[str, int]) -> None:
        shown = ", ".join(f"{e.removeprefix('tcp://')} {n}" for e, n in told.items())
        self.cluster.broke("abort-reaches-prefill", f"room {request.room} on decode {request.manager} "
                           f"{what}; ABORTs per prefill rank it bootstrapped from: {shown}")  # fmt: skip

    # -- aborted-stays-failed (and abort-reaches-prefill's second abort) ------------------------------------
    def aborted(self, request: Request) -> None:
        """Once the scheduler's abort() returned: a failure recorded and Failed in the table; a
        second abort() tells no rank again; then the Success of an answer already on its way
        lands (the decode inbox's write), and every later poll must still read Failed."""
        c, manager, room = self.cluster, self.cluster.managers[request.manager], request.room
        if self.checks("aborted-stays-failed"):
            recorded, status = room in _records(manager), manager.request_status.get(room)
            if not recorded or status != KVPoll.Failed:
                c.broke("aborted-stays-failed", f"room {room} on decode {request.manager} was aborted: "
                        f"failure recorded {recorded}, status {_name(status)}")  # fmt: skip
        if self.drives("abort-reaches-prefill"):
            c.call(request.receiver.abort, f"a second abort() of room {room}")
            if any(n > 1 for n in self._told(request).values()):
                self._broke_told(request, "was aborted twice", self._told(request))
        if self.drives("aborted-stays-failed"):
            c.note("status thread", f"update_status(room {room}, Success): an answer already on its way")
            c.call(lambda: manager.update_status(room, KVPoll.Success), f"late Success of room {room}")

    def polled(self, request: Request, status: Any) -> None:
        if request.aborted and status != KVPoll.Failed and self.checks("aborted-stays-failed"):
            self.cluster.broke("aborted-stays-failed", f"room {request.room} on decode {request.manager} "
                               f"was aborted and polls {_name(status)}")  # fmt: skip

    # -- send-after-failed-init -------------------------------------------------------------------------
    def send_after_failed_init(self, request: Request, pages: list[int]) -> None:
        """`send_metadata` on a receiver whose init failed raises nothing; the room stays Failed
        with its failure recorded."""
        if not self.drives("send-after-failed-init"):
            return
        c, manager, room = self.cluster, self.cluster.managers[request.manager], request.room
        c.note(f"decode {request.manager}", f"send_metadata room {room} after its init failed")
        what = f"send_metadata of room {room} after its init failed"
        try:
            request.receiver.send_metadata(list(pages))
        except Exception as exc:  # what the scheduler would get from its call
            c.broke("send-after-failed-init", f"{what} raised {type(exc).__name__}: {exc}")
        status, recorded = manager.request_status.get(room), room in _records(manager)
        if status != KVPoll.Failed or not recorded:
            c.broke("send-after-failed-init", f"{what} left it {_name(status)}, failure recorded {recorded}")

    # -- the drain's probes ---------------------------------------------------------------------------------
    def drain_probes(self) -> None:
        """Once the drain ended every request, on each prefill: the `refuse_send` fault on its
        first rank (its entry then goes), then a request whose rank routes are refused, so its
        init fails on the cold cache, is sent its metadata; each ends as the drain ends one.
        Every run asks both, whatever its steps drew (a search of 30 runs, on upstream, may
        draw neither)."""
        if not (self.drives("send-failure-stops-sends") or self.drives("send-after-failed-init")):
            return
        c = self.cluster
        for p, prefill in enumerate(c.prefills):
            self.refuse_send(0, p, 0)
            c.note(f"prefill {p}", "GET /route for its ranks is refused")
            self.net.refused_routes.add(prefill.bootstrap_addr)
            try:
                request = c.open_request(0, p, None)
                if request is not None:
                    c.init(request)  # a failed init is sent its metadata (`send_after_failed_init`)
            finally:
                self.net.refused_routes.discard(prefill.bootstrap_addr)
        for request in list(c.open):
            self._end(request)

    def _end(self, request: Request) -> None:
        """Poll the request; if it is still open, abort it and poll it (as the drain ends one)."""
        c = self.cluster
        c.poll(request)
        if request in c.open:
            c.note(f"decode {request.manager}", f"abort room {request.room} (the probe ends it)")
            request.aborted = True
            c.call(request.receiver.abort)
            c.poll(request)

    # -- send-failure-stops-sends: the refuse_send fault ---------------------------------------------------
    def refuse_send(self, m: int, p: int, rank: int) -> None:
        """A new request on prefill `p` inits; one of its ranks' connects is refused while the
        scheduler sends its metadata and polls it: no rank is sent the metadata after the
        refusal, and the poll does not read Success. Then the request ends (aborted if it
        waits: hardened resends once the rank answers)."""
        c, endpoints = self.cluster, self.cluster.prefills[p].endpoints
        request = None if c._gone(p) or not endpoints else c.open_request(m, p, None)
        if request is None:
            return
        c.init(request)
        refused, start = endpoints[rank % len(endpoints)], len(self.net.trail)
        c.note(f"prefill {p}", f"connects to {refused} are refused (EMFILE)")
        self.net.refused.add(refused)
        try:
            c.send(request)
            status = c.call(request.receiver.poll, f"poll of room {request.room}") if request.sent else None
        finally:
            self.net.refused.discard(refused)
        trail = self.net.trail[start:]
        after = trail[trail.index(("refused", refused, -1)) :] if ("refused", refused, -1) in trail else []
        sent = [e for what, e, room in after if what == "metadata" and room == request.room]
        if after and (sent or status == KVPoll.Success):
            shown = f"metadata sent after that: {sent or 'none'}; its poll: {_name(status)}"
            c.broke(
                "send-failure-stops-sends",
                f"room {request.room}'s connect to {refused} was refused at its send; {shown}",
            )
        self._end(request)


def _named(manager: Any, addr: str) -> set[str]:
    """The rank endpoints named by `manager`'s cache entries for prefill `addr`."""
    pool = list(manager.connection_pool.items())
    infos = [info for key, entry in pool if key.startswith(f"{addr}_") for info in entry]
    return {_endpoint(info) for info in infos} - {""}


def _endpoint(info: Any) -> str:
    ok = isinstance(info, dict) and info.get("rank_ip") and info.get("rank_port")
    return f"tcp://{info['rank_ip']}:{info['rank_port']}" if ok else ""


def _records(manager: Any) -> dict[int, str]:
    return getattr(manager, "failure_records", {})


def _name(status: Any) -> str:
    return "absent" if status is None else KVPoll(status).name
