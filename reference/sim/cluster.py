"""A small PD cluster on the mock transport, driven step by step by a `Plan`.

Several decode managers (each with its inbox, KV memory and heartbeat thread on one
`VirtualClock`) and several prefills (`MockPrefill`: TP x CP ranks behind a bootstrap
table) share one `MockNetwork`. The simulation plays the decode scheduler: it opens a
request (`try_ensure_parallel_info`, then a receiver), `init`s it, sends its metadata,
polls it, aborts it, and ends it as upstream does (Success: `clear()`; Failed:
`failure_exception()`), after which mori's decode-status thread cleans up its tracking
(`_cleanup_room_tracking`, its own step). Faults are steps too (`plan.FAULTS`).

Threads: the heartbeats are real threads parked on the virtual clock; a `tick` wakes
them one at a time and waits until each parks again, so they interleave with the
scheduler's steps at operation granularity, always in the same order. The
decode-status thread runs as steps of its own, or inside the failure handler's loop
(`race_cleanup`, at the protocol's `node_failure.after_room` hook).

Everything the run does is logged as `(virtual time, lane, text)` for the timeline of a
counterexample; every check raises `Violation` (`invariants.py`).
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from types import ModuleType
from typing import Any

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.harness.capture import ThreadErrors
from reference.hooks import Hooks
from reference.prefill.mock import MockPrefill
from reference.sim.health import HeartbeatWatch, first_misses
from reference.sim.heap import CONTAINERS, container_sizes, grown
from reference.sim.invariants import Violation
from reference.sim.notices import NoticeNetwork, Notices
from reference.sim.plan import Plan
from reference.sim.request import Request
from reference.status import KVPoll
from reference.transport.base import Reply

CONFIG = ManagerConfig()  # upstream's defaults: 5 s heartbeat, 2 misses, 300 s waiting timeout
PAGES = [0, 1]
PAUSE = 2 * CONFIG.waiting_timeout  # how long a paused prefill takes nothing
SETTLE = 2 * PAUSE  # virtual seconds state that expires by itself may take to go, after the drain
BUSY_POLLS, BUSY_STEP = 200, 0.001  # quick_restart: the scheduler's loop polls every 1 ms for 200 ms
BUSY_FETCHES = 50  # a waiting request asks /route at most this often in those polls (back-off to 50 ms)
HANDOFF = 1.0  # real seconds a preempted status thread and the failure handler wait for each other
DONE = (KVPoll.Success, KVPoll.Failed)
DRAIN_PASS = 20.0  # virtual seconds between the scheduler's passes while the drain lets time pass
SLOW_SEND = 1.0  # slow_send: virtual seconds one message to a paused prefill's rank blocks its sender


class Cluster:
    def __init__(
        self, variant: ModuleType, plan: Plan, errors: ThreadErrors, checking: frozenset[str] | None = None
    ) -> None:
        self.variant, self.plan, self.errors, self.checking = variant, plan, errors, checking
        self.clock = VirtualClock()
        self.net = NoticeNetwork(self.clock, immediate=plan.sockets == "fail-fast")  # and /health answers
        self.notices = Notices(self, self.net)  # ABORTs, disconnects, sends after a failure
        self.net.latency = 1.0 if "latency" in plan.faults else 0.0
        self.prefills = [
            MockPrefill(self.net, f"10.0.{i}.1:8998", tp_size=tp, cp_size=cp)
            for i, (tp, cp) in enumerate(plan.prefills)
        ]
        self.hooks = [Hooks() for _ in range(plan.managers)]
        self.managers: list[Any] = []
        self.log: list[tuple[float, str, str]] = []
        self.open: list[Request] = []
        self.ended: list[Request] = []  # requests that ended (their receivers, for late calls)
        self.cleared: set[tuple[int, int]] = set()  # ... and have not been reopened
        self.cleanups: list[tuple[int, int]] = []  # mori's pending cleanups (manager, room)
        self.known = [[False] * len(self.prefills) for _ in range(plan.managers)]
        self.restarts = [0] * len(self.prefills)
        self.down_since: list[float | None] = [None] * len(self.prefills)
        self.stuck: list[bool] = [False] * len(self.prefills)  # restarted, its ranks not registered yet
        self.stuck_until: list[float | None] = [None] * len(self.prefills)  # ... until then (`stuck`)
        # [start, end, how long before the decode may give up]: a kill, for the heartbeat (its probes
        # fail); ranks not registered yet (/health answers), for the waiting timeout
        self.outages: list[list[Any]] = [[] for _ in self.prefills]
        self.same_port_restarts: list[list[float]] = [[] for _ in self.prefills]
        self.lossy: list[list[float]] = [[] for _ in self.prefills]  # when a message to it may be lost or
        # held past a waiting timeout (a drop armed, a pause's end): a request may fail of that
        self.known_when_down: list[list[bool]] = [[False] * plan.managers for _ in self.prefills]
        self.misses: set[int] = set()  # prefills whose next probe fails (hb_miss)
        self.parked: list[tuple[threading.Thread, threading.Event]] = []  # preempted status threads
        self._rooms = iter(range(100, sys.maxsize))
        self.answers: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (manager, room) -> (seq, rank)
        self.answers_taken = 0  # Success statuses delivered to the decode inboxes, in order
        self.early: list[str] = []  # requests that turned Success on answers not their own
        self.opened = 0  # requests opened, the warm-ups' included
        self.step_index: int | None = None
        self.watch = HeartbeatWatch(self.net, self.clock, CONFIG.heartbeat_max_failures, self.note)

    # -- set-up and teardown ----------------------------------------------------------------
    def start(self) -> None:
        before = set(threading.enumerate())
        if "unhealthy" in self.plan.faults:  # each prefill's first answer to each heartbeat misses
            first_misses(self.net, [prefill.bootstrap_addr for prefill in self.prefills])
        for m in range(self.plan.managers):
            manager = self.variant.KVManager(self.net, CONFIG, self.clock, self.hooks[m])
            self.managers.append(manager)
            self.notices.watch(manager)
            manager.listen(KVMemory(regions=4, pages=len(PAGES), item_len=8))
            self._watch_answers(m, manager)
        for m, manager in enumerate(self.managers):
            for p in range(len(self.prefills)):
                self._ensure(m, p)
            with self.watch.starting(m, manager):
                manager.start_heartbeat()
            self.clock.wait_for_sleepers(m + 1)
            self.clock.advance(CONFIG.heartbeat_interval / (self.plan.managers + 1))  # staggered
        kept = self.watch.non_daemons(before)
        if kept:
            self.broke("threads-alive", f"threads {kept} the managers started are not daemons: they keep "
                       "the decode's process alive")  # fmt: skip

    def close(self) -> None:
        self.release_parked()
        for manager in self.managers:
            manager.close()
        for prefill in self.prefills:
            prefill.close()
        self.net.close()

    # -- what the run keeps ---------------------------------------------------------------------
    def sizes(self) -> dict[str, int]:
        roots: dict[str, Any] = {f"manager{m}": mgr for m, mgr in enumerate(self.managers)}
        opaque = frozenset(getattr(self.variant, "SIM_OPAQUE", ()))
        for cls in _variant_classes(self.variant):
            for name, value in vars(cls).items():
                if isinstance(value, CONTAINERS) and name not in opaque:
                    roots[f"{cls.__name__}.{name}"] = value
        modules = {sys.modules.get(cls.__module__) for cls in _variant_classes(self.variant)}
        for module in (module for module in modules if module is not None):
            for name, value in vars(module).items():
                if isinstance(value, CONTAINERS) and not name.startswith("__"):
                    roots[f"{module.__name__}.{name}"] = value
        return container_sizes(roots, opaque)

    def warm_up(self) -> None:
        """One request per manager and prefill from open to end, and its cleanup."""
        requests = []
        for m in range(len(self.managers)):
            for p in range(len(self.prefills)):
                request = self.open_request(m, p, None)
                if request is not None:
                    self.init(request)
                    self.send(request)
                    requests.append(request)
        for _ in range(2):  # with latency, the metadata and the answer each take a second
            self.tick()
            for request in requests:
                self.poll(request)
        for request in [r for r in requests if r in self.open]:  # a fault still in the way: end it
            request.aborted = True
            self.call(request.receiver.abort)
            self.poll(request)
        self.run_cleanups()

    def drain(self) -> None:
        """End everything: faults healed, prefills back, delays due, every open request ended
        and cleared."""
        self.net.heal()
        for p in range(len(self.prefills)):
            if self.down_since[p] is not None:
                self.toggle_kill(p)
            if self.stuck[p] and self.stuck_until[p] is None:
                self.toggle_stuck(p)
        for request in list(self.open):  # the scheduler's pass as the faults heal
            self.poll(request)
        due = [self.net.next_due() or 0.0, *(t for t in self.stuck_until if t is not None)]
        held = max(0.0, max(due) - self.clock.now())  # a pause, a delay, a slow restart still due
        until = self.clock.now() + max(held, CONFIG.waiting_timeout) + 3 * CONFIG.heartbeat_interval
        while self.clock.now() < until:  # the scheduler goes on polling meanwhile
            self.advance(min(DRAIN_PASS, until - self.clock.now()), "drain")
            for request in list(self.open):
                self.poll(request)
        self.release_parked()
        for request in list(self.open):
            self.poll(request)
            if request in self.open and request.sent:
                shown = f"room {request.room} on decode {request.manager}"
                self.broke("sent-request-ends", f"{shown} sent its metadata at {request.sent_at:g} s and is "
                           f"still open at {self.clock.now():g} s, its faults healed and a waiting timeout "
                           f"({CONFIG.waiting_timeout:g} s) passed")  # fmt: skip
            if request in self.open:
                self.note(f"decode {request.manager}", f"abort room {request.room} (drain)")
                request.aborted = True
                self.call(request.receiver.abort)
                self.poll(request)
        self.notices.drain_probes()
        self.run_cleanups()
        for _ in range(CONFIG.heartbeat_max_failures + 1):
            self.tick()

    def check_bound(self, before: dict[str, int]) -> None:
        """Nothing kept per request; state that expires (a bounded hold) may take SETTLE and the
        next requests to go."""
        if not grown(before, self.sizes()):
            return
        self.advance(SETTLE, "settle")
        self.warm_up()  # the next requests: state a component lets go of lazily goes now
        grew = grown(before, self.sizes())
        if grew:
            listed = ", ".join(f"{path} {a} -> {b}" for path, (a, b) in list(grew.items())[:4])
            self.broke("whole-state-bound", f"{SETTLE:g} s after all {self.opened} requests ended and were "
                       f"cleared: {listed}")  # fmt: skip

    # -- the scheduler's steps ---------------------------------------------------------------------
    def open_request(self, m: int, p: int, room: int | None) -> Request | None:
        if not self._ensure(m, p):
            self.note(f"decode {m}", f"no parallel info from prefill {p}: request not opened")
            return None
        room = next(self._rooms) if room is None else room
        addr = self.prefills[p].bootstrap_addr
        receiver = self.call(lambda: self.variant.KVReceiver(self.managers[m], addr, room), "KVReceiver()")
        request = Request(m, p, room, receiver, opened_at=self.clock.now())
        self.opened += 1
        self.open.append(request)
        self.cleared.discard((m, room))
        self.note(f"decode {m}", f"open room {room} on prefill {p}")
        return request

    def init(self, request: Request) -> None:
        manager = self.managers[request.manager]
        if request.inited or manager.request_status.get(request.room) == KVPoll.Failed:
            return  # the scheduler inits a request once, and never one that already failed
        request.inited = True
        before = self._pool_entries(request)
        self._attributed(request, lambda: request.receiver.init(0), "init")
        after = self._pool_entries(request)
        for key, entry in after.items():
            _add(request.used, key, entry)
        if manager.request_status.get(request.room) == KVPoll.Failed:
            added = [key for key, entry in after.items() if before.get(key) is not entry]
            self.note(f"decode {request.manager}", f"init room {request.room}: Failed")
            if added:
                self.broke("failed-fill-not-cached", f"room {request.room}'s init failed and left new "
                                f"cache entries {added}")  # fmt: skip
            self.notices.send_after_failed_init(request, PAGES)
            return
        self.note(f"decode {request.manager}", f"init room {request.room}: ports {self._ports(request)}")

    def send(self, request: Request) -> None:
        failed = self.managers[request.manager].request_status.get(request.room) == KVPoll.Failed
        if not request.inited or request.sent or request not in self.open or failed:
            return
        request.sent, request.sent_at, request.sent_seq = True, self.clock.now(), self.answers_taken
        table = getattr(self.managers[request.manager], "required_prefill_response_num_table", {})
        request.required = int(table.get(request.room, 1))
        failures = self.net.send_failures
        self._attributed(request, lambda: request.receiver.send_metadata(PAGES), "send_metadata")
        raised = self.net.send_failures > failures
        request.send_returned_at = None if raised else self.clock.now()  # a raised send fails on itself
        self.note(f"decode {request.manager}", f"send_metadata room {request.room}"
                  + (": the send raised" if raised else ""))  # fmt: skip
        if raised:
            self._check_invalidated(request, "its send raised")

    def poll(self, request: Request) -> None:
        if request not in self.open:
            return
        manager = self.managers[request.manager]
        written = manager.request_status.get(request.room)
        gone, now = self._gone(request.prefill), self.clock.now()
        request.longest_gap = max(request.longest_gap, now - (request.polled_at or request.opened_at))
        request.polled_at = now
        if request.waiting_since is None and gone and request.sent:  # the scheduler's part is done
            request.waiting_since = self.clock.now()
        request.waiting_since = request.waiting_since if gone else None
        status = self._attributed(request, request.receiver.poll, "poll")
        if status == KVPoll.Success and request.seen_failed:
            self.broke("failed-is-terminal", f"room {request.room} on decode {request.manager} read Failed, "
                       "then Success")  # fmt: skip
        self.notices.polled(request, status)
        if status not in DONE:
            self._check_bounded_wait(request)
            return
        self.note(f"decode {request.manager}", f"poll room {request.room}: {KVPoll(status).name}")
        record = getattr(manager, "failure_records", {}).get(request.room)
        if status == KVPoll.Success and record is not None:
            self.broke("no-record-without-failure", f"room {request.room} on decode {request.manager} reads "
                       f"Success with a failure recorded for it: {record!r}")  # fmt: skip
        timed_out = (
            request.sent_at is not None and self.clock.now() - request.sent_at >= CONFIG.waiting_timeout
        )
        if status == KVPoll.Failed and written == KVPoll.WaitingForInput and timed_out:
            self._check_invalidated(request, "its waiting timeout fired")
            self.notices.timed_out(request)
        if status == KVPoll.Failed and written == KVPoll.WaitingForInput:
            self._check_timeout_base(request)
        self.end(request, status)

    def end(self, request: Request, status: int) -> None:
        if status == KVPoll.Failed and not request.aborted:
            self._check_recovered(request)
        ending = request.receiver.clear
        if status == KVPoll.Failed and hasattr(request.receiver, "failure_exception"):
            ending = partial(_failure_exception, request.receiver)
        recorded = self.managers[request.manager].failure_records.get(request.room)
        taken = self._attributed(request, ending, "clear")
        if status == KVPoll.Failed and recorded and taken is not None and recorded not in str(taken):
            self.broke("failure-reason-kept", f"room {request.room} failed with the reason {recorded!r} "
                       f"recorded; its exception says {str(taken)!r}")  # fmt: skip
        self._ended(request)

    def _ended(self, request: Request) -> None:
        self.open.remove(request)
        self.ended.append(request)
        self.cleared.add((request.manager, request.room))
        if "mooncake" not in self.plan.faults:  # mooncake has no decode-status thread: clear() is all
            self.cleanups.append((request.manager, request.room))

    def abort(self, request: Request) -> None:
        self.note(f"decode {request.manager}", f"abort room {request.room}")
        request.aborted = True
        before = self.managers[request.manager].request_status.get(request.room)
        self._attributed(request, request.receiver.abort, "abort")
        if self.managers[request.manager].request_status.get(request.room) != before:
            # an abort that wrote a status wrote Failed (0.5.11's abort writes none: not judged here)
            self._check_failed_visible(request.manager, request.room)
        self.notices.aborted(request)

    def abort_clear(self, request: Request) -> None:
        """The scheduler aborts an open request and drops it at once: abort(), then clear()."""
        self.abort(request)
        self.note(f"decode {request.manager}", f"clear room {request.room} (aborted)")
        self._attributed(request, request.receiver.clear, "clear")
        self._ended(request)

    def rank_failed(self, request: Request) -> None:
        """The request failed on another decode rank: the scheduler's poll, all-reduced over the
        ranks (upstream `poll_and_all_reduce`, a MIN), reads Failed although this receiver's own
        poll has not, so the scheduler takes its exception (`failure_exception()`, which clears
        it); a poll after that reads Failed and raises nothing."""
        self.note("scheduler", f"room {request.room} on decode {request.manager} failed on another decode "
                  "rank: failure_exception()")  # fmt: skip
        self._attributed(request, partial(_failure_exception, request.receiver), "failure_exception")
        status = self._attributed(request, request.receiver.poll, "poll after failure_exception()")
        if status != KVPoll.Failed:
            shown = "None" if status is None else KVPoll(status).name
            self.broke("exception-latches-failed", f"room {request.room} on decode {request.manager} polls "
                       f"{shown} after its exception was taken")  # fmt: skip
        self._ended(request)

    # -- concurrent writers ---------------------------------------------------------------------------
    def fail_open(self, request: Request) -> None:
        self.note("status thread", f"update_status(room {request.room}, Failed) (open)")
        self.call(lambda: self.managers[request.manager].update_status(request.room, KVPoll.Failed))
        self._check_failed_visible(request.manager, request.room)

    def late_failed(self, m: int, room: int) -> None:
        self.note("status thread", f"update_status(room {room}, Failed) on decode {m} (late)")
        self.call(lambda: self.managers[m].update_status(room, KVPoll.Failed))

    def late_status(self, m: int, room: int, success: bool) -> None:
        """A status path (the decode inbox taking a prefill's answer) that found the room open and
        writes after the scheduler's clear()."""
        status = KVPoll.Success if success else KVPoll.Transferring
        self.note("status thread", f"update_status(room {room}, {status.name}) on decode {m} (late)")
        self.call(lambda: self.managers[m].update_status(room, status))

    def late_record(self, m: int, room: int) -> None:
        """A failure path (the failure handler, the decode inbox) that found the room open and
        records its reason, then writes Failed, after the scheduler's clear()."""
        self.note("status thread", f"record_failure(room {room}), then Failed, on decode {m} (late)")
        manager = self.managers[m]
        if hasattr(manager, "record_failure"):
            self.call(lambda: manager.record_failure(room, f"late failure of room {room}"))
        self.call(lambda: manager.update_status(room, KVPoll.Failed))

    def can_open(self, old: Request) -> bool:
        """Whether a new request on `old`'s manager and prefill would open now (parallel info)."""
        return self._ensure(old.manager, old.prefill)

    def late_answer(self, old: Request, rank: int) -> None:
        """The decode inbox took a prefill rank's Success for the room while `old` had it open (its
        check passed) and counts it after `old`'s clear(): the rest of its status path, late."""
        manager, room = self.managers[old.manager], old.room
        tracker = getattr(manager, "prefill_response_tracker", None)
        if tracker is None:
            return
        rank %= max(1, len(self.prefills[old.prefill].endpoints))
        self.note("status thread", f"counts prefill rank {rank}'s Success for room {room} on decode "
                  f"{old.manager} (taken while the room was open, counted after its clear())")  # fmt: skip
        arrived = tracker.setdefault(room, set())
        arrived.add(rank)
        if len(arrived) >= getattr(manager, "required_prefill_response_num_table", {}).get(room, 1):
            self.call(lambda: manager.update_status(room, KVPoll.Success), f"late Success of room {room}")

    def late_abort(self, old: Request) -> None:
        """The scheduler's abort() of a request that has ended (its receiver, late)."""
        self.note(
            "scheduler", f"abort() of the ended request of room {old.room} on decode {old.manager} (late)"
        )
        newer = next((r for r in self.open if (r.manager, r.room) == (old.manager, old.room)), None)
        manager = self.managers[old.manager]
        before = manager.request_status.get(old.room)
        self.call(old.receiver.abort, f"late abort() of room {old.room}")
        after = manager.request_status.get(old.room)
        if newer is not None and after != before and after == KVPoll.Failed:
            self.broke("reused-room-unaffected", f"room {old.room} was reused on decode {old.manager}; the "
                       f"late abort of its previous request turned the new one Failed")  # fmt: skip

    def cleanup(self, index: int) -> None:
        m, room = self.cleanups.pop(index % len(self.cleanups))
        self.note("status thread", f"_cleanup_room_tracking(room {room}) on decode {m}")
        self.call(lambda: self.managers[m]._cleanup_room_tracking(room))

    def run_cleanups(self, manager: int | None = None) -> None:
        for index in reversed(range(len(self.cleanups))):
            if manager in (None, self.cleanups[index][0]):
                self.cleanup(index)

    def race_cleanup(self, m: int, late: bool = False) -> None:
        """Mori's status thread starts one pending cleanup and is preempted right after it
        fetched the tracker set (protocol hook `cleanup_room_tracking.after_get`); it goes on
        between two rooms of the next failure handler (`node_failure.after_room`), or, `late`,
        at the status thread's next step (after a failure, a re-registration and new rooms)."""
        pending = [i for i, (mm, _) in enumerate(self.cleanups) if mm == m]
        if not pending:
            return
        _, room = self.cleanups.pop(pending[0])
        parked, go, done = threading.Event(), threading.Event(), threading.Event()  # parked: or done

        def after_get(got_room: int) -> None:
            if got_room == room:
                parked.set()
                go.wait(HANDOFF)

        def after_room(addr: str, failed_room: int) -> None:
            if not go.is_set():
                self.note("status thread", f"resumes inside _handle_node_failure({addr})")
                go.set()
                done.wait(HANDOFF)

        def cleanup() -> None:
            try:
                self.managers[m]._cleanup_room_tracking(room)
            finally:
                done.set()
                parked.set()  # a cleanup that never reached the hook has nothing to race

        self.hooks[m].set("cleanup_room_tracking.after_get", after_get)
        if not late:
            self.hooks[m].set("node_failure.after_room", after_room)
        thread = threading.Thread(target=cleanup, name=f"status-thread-{m}", daemon=True)
        thread.start()
        parked.wait(HANDOFF)
        self.parked.append((thread, go))
        self.note("status thread", f"_cleanup_room_tracking(room {room}) on decode {m}: preempted after get")

    def release_parked(self) -> None:
        """Let every preempted status thread go on, and wait (bounded) until it ends."""
        for thread, go in self.parked:
            if not go.is_set():
                self.note("status thread", "a preempted cleanup goes on")
            go.set()
            thread.join(HANDOFF)
        self.parked.clear()

    # -- prefill faults ------------------------------------------------------------------------------
    def restart(self, p: int, same_ports: bool) -> None:
        if self._gone(p):
            return
        self.prefills[p].restart(same_ports=same_ports)
        self.restarts[p] += 1
        self.outages[p].append([self.clock.now(), self.clock.now(), CONFIG.heartbeat_interval])
        if same_ports:
            self.same_port_restarts[p].append(self.clock.now())
        self.note(f"prefill {p}", f"restart on {'the same' if same_ports else 'new'} ports "
                  f"{self.prefills[p].rank_ports}")  # fmt: skip

    def toggle_kill(self, p: int) -> None:
        prefill = self.prefills[p]
        if self.down_since[p] is None:
            prefill.kill()
            self.down_since[p] = self.clock.now()
            self.outages[p].append([self.clock.now(), None, CONFIG.heartbeat_interval])
            self.known_when_down[p] = [self.known[m][p] for m in range(len(self.managers))]
            self.note(f"prefill {p}", "killed")
        else:
            prefill.start()
            self.down_since[p] = None
            self.outages[p][-1][1] = self.clock.now()
            self.note(f"prefill {p}", f"back on new ports {prefill.rank_ports}")

    def toggle_stuck(self, p: int) -> None:
        """A restart whose ranks do not register yet: /health answers, `GET /route` says 503 until
        the next `stuck` step (or the drain) lets them register, on new ports."""
        prefill = self.prefills[p]
        if self.down_since[p] is not None:
            return
        if not self.stuck[p]:
            prefill.kill()
            self.net.serve(prefill.bootstrap_addr, _registering)
            self.net.add_prefill(prefill.bootstrap_addr)
            self.stuck[p] = True
            self.restarts[p] += 1
            self.outages[p].append([self.clock.now(), None, CONFIG.waiting_timeout])
            self.note(f"prefill {p}", "restarts; its ranks are not registered yet (/route: 503)")
        else:
            prefill.start()
            self.stuck[p] = False
            self.outages[p][-1][1] = self.clock.now()
            self.note(f"prefill {p}", f"its ranks registered, on new ports {prefill.rank_ports}")

    def slow_restart(self, p: int) -> None:
        """A restart whose ranks take twice the waiting timeout to register (`stuck`)."""
        if self.stuck[p] or self.down_since[p] is not None:
            return
        self.toggle_stuck(p)
        self.stuck_until[p] = self.clock.now() + PAUSE
        self.note(f"prefill {p}", f"its ranks register at {self.stuck_until[p]:g} s")

    def _register_due(self) -> None:
        for p, until in enumerate(self.stuck_until):
            if until is not None and until <= self.clock.now():
                self.stuck_until[p] = None
                self.toggle_stuck(p)

    def busy_poll(self) -> None:
        """The scheduler's loop polls every open request each millisecond for a while: a request
        that waits for its prefill must back off its `GET /route` retries meanwhile."""
        waiting = [r for r in self.open if self._gone(r.prefill) and r.sent]
        fetches = self.net.route_fetches
        for _ in range(BUSY_POLLS):
            self._advance_delivering(self.clock.now() + BUSY_STEP)
            for request in list(self.open):
                self.poll(request)
        fetched = self.net.route_fetches - fetches
        self.note("scheduler", f"polled every 1 ms for {BUSY_POLLS * BUSY_STEP:g} s: {fetched} route fetches")
        if waiting and fetched > BUSY_FETCHES * len(waiting):
            self.broke("retry-backs-off", f"{len(waiting)} request(s) waiting for their prefill fetched "
                       f"/route {fetched} times in {BUSY_POLLS} polls 1 ms apart (at most {BUSY_FETCHES} "
                       "each)")  # fmt: skip
        self._check_detections()

    def pause(self, p: int) -> None:
        """The prefill stops for twice the waiting timeout (a GC, a stuck GPU): /health still
        answers, and what is sent to its ranks meanwhile waits until it resumes."""
        until = self.clock.now() + PAUSE
        for endpoint in self.prefills[p].endpoints:
            self.net.hold(endpoint, until)
        self.lossy[p].append(until)
        self.note(f"prefill {p}", f"paused until {until:g} s: its ranks take no message before then")

    def drop(self, p: int, rank: int) -> None:
        endpoints = self.prefills[p].endpoints
        if endpoints:
            self.net.drop(1, endpoint=endpoints[rank % len(endpoints)])
            self.lossy[p].append(float("inf"))  # armed until a message takes it
            self.note(f"prefill {p}", f"the next message to rank {rank % len(endpoints)} is lost")

    def slow_send(self, m: int, p: int) -> None:
        """The prefill stops taking messages (`pause`) and a request's metadata send to it blocks
        SLOW_SEND s per message (its ranks' queues are full) before it queues; the scheduler's
        next pass comes half of that before the waiting timeout, counted from the send's return."""
        if self.stuck[p] or self.down_since[p] is not None:
            return
        self.pause(p)
        request = self.open_request(m, p, None)
        if request is None:
            return
        self.init(request)
        with self._blocking_sends(set(self.prefills[p].endpoints)):
            self.send(request)
        if request.sent:
            self.advance(CONFIG.waiting_timeout - SLOW_SEND / 2, "slow_send")

    @contextmanager
    def _blocking_sends(self, endpoints: set[str]) -> Iterator[None]:
        """Each message to `endpoints` takes SLOW_SEND s of virtual time before it goes out."""
        deliver = self.net.deliver

        def blocking(endpoint: str, frames: list[bytes]) -> None:
            if endpoint in endpoints:
                self.clock.advance(SLOW_SEND)
                self.note("clock", f"a send to {endpoint} blocks: +{SLOW_SEND:g} s")
            deliver(endpoint, frames)

        self.net.deliver = blocking  # type: ignore[method-assign]
        try:
            yield
        finally:
            del self.net.deliver

    def delay_status(self, m: int) -> None:
        self.net.delay(2 * CONFIG.heartbeat_interval, 1, endpoint=f"tcp://{self.managers[m].inbox.endpoint}")
        self.note(f"decode {m}", "the next message to its inbox is held for 10 s")

    # -- time ---------------------------------------------------------------------------------------------
    def tick(self) -> None:
        self.advance(CONFIG.heartbeat_interval, "tick")

    def advance(self, seconds: float, why: str) -> None:
        """Let time pass; a pending `hb_miss` fails the one probe of a single heartbeat interval."""
        one_round = seconds <= CONFIG.heartbeat_interval
        missed = [self.prefills[p].bootstrap_addr for p in self.misses if self.down_since[p] is None]
        for addr in missed if one_round else []:
            self.net.kill(addr)
        self._advance_delivering(self.clock.now() + seconds)
        self._register_due()
        for addr in missed if one_round else []:
            self.net.revive(addr)
        if one_round:
            self.misses.clear()
        self.note("clock", f"{why}: +{seconds:g} s")
        self._check_detections()

    def _advance_delivering(self, target: float) -> None:
        """Move the clock to `target`, delivering each held message at its due time."""
        while (due := self.net.next_due()) is not None and due <= target:
            self.clock.advance(max(0.0, due - self.clock.now()))
            self.net.pump()
        self.clock.advance(target - self.clock.now())
        self.net.pump()

    def collect(self) -> None:
        gc.collect()
        self.note("clock", "gc.collect()")

    def _watch_answers(self, m: int, manager: Any) -> None:
        """See every status the decode inbox takes (ours: `DecodeInbox._on_status`), in order."""
        inbox = getattr(manager, "inbox", None)
        take = getattr(inbox, "_on_status", None)
        if take is not None:
            inbox._on_status = partial(self._answer_taken, m, take)  # type: ignore[union-attr]

    def _answer_taken(self, m: int, take: Callable[[Any], None], message: Any) -> None:
        """answers-per-lifecycle: a Success that turns a request's room Success must be its last
        missing answer; counted: the ranks that answered its room since it sent its metadata."""
        take(message)
        if getattr(message, "status", None) != KVPoll.Success:
            return
        self.answers_taken += 1
        room = message.room
        self.answers.setdefault((m, room), []).append((self.answers_taken, message.prefill_rank))
        if self.managers[m].request_status.get(room) != KVPoll.Success:
            return
        for request in self.open:
            if (request.manager, request.room) != (m, room) or request.sent_seq is None:
                continue
            own = {rank for seq, rank in self.answers[(m, room)] if seq > request.sent_seq}
            if len(own) < request.required:
                self.early.append(
                    f"room {room} on decode {m} turned Success on prefill rank {message.prefill_rank}'s "
                    f"answer with {len(own)} of the {request.required} answers it waits for since its "
                    f"metadata (ranks {sorted(own)})"
                )

    # -- checks after every step ----------------------------------------------------------------------
    def check_threads(self) -> None:
        self.notices.report()
        if self.errors.errors:
            self.broke("threads-alive", f"a thread raised: {self.errors.describe()}")
        for m, manager in enumerate(self.managers):
            if not manager.heartbeat_alive:
                self.broke("threads-alive", f"decode {m}'s heartbeat thread is gone")
        for invariant, detail in self.watch.settled():
            self.broke(invariant, detail)

    def check_always(self) -> None:
        self.check_threads()
        if self.early:
            self.broke("answers-per-lifecycle", self.early[0])
        for request in self.open:
            status = self.managers[request.manager].request_status.get(request.room)
            if request.seen_failed and status not in (KVPoll.Failed, None):
                shown = f"room {request.room} on decode {request.manager}"
                self.broke("failed-is-terminal", f"{shown} read Failed, then {KVPoll(status).name}")
            request.seen_failed = request.seen_failed or status == KVPoll.Failed
            if status == KVPoll.Success and not request.sent:
                shown = f"room {request.room} on decode {request.manager}"
                self.broke("success-after-own-metadata", f"{shown} is Success before it sent its metadata")
        for m, manager in enumerate(self.managers):
            for mm, room in self.cleared:
                if mm == m and room in manager.request_status:
                    status = KVPoll(manager.request_status[room]).name
                    which = (
                        "cleared-stays-cleared" if status == "Failed" else "cleared-stays-cleared-any-status"
                    )
                    self.broke(which, f"room {room} was cleared on decode {m} and is "
                                    f"back as {status}")  # fmt: skip

    def overlap(self) -> float:
        """How many cache generations of one key are in use at once (by open requests, or cached),
        plus a little for each open request that holds one.

        The search steers towards runs where this is high (Hypothesis `target`): two
        generations at once is where an invalidation can hit the wrong one.
        """
        best = 0.01 * sum(bool(r.used) for r in self.open)
        for m, manager in enumerate(self.managers):
            pool = manager.connection_pool
            for key in {key for r in self.open if r.manager == m for key in r.used}:
                entries = {id(r.used[key][-1]) for r in self.open if r.manager == m and key in r.used}
                if key in pool:
                    entries.add(id(pool[key]))
                best = max(best, len(entries) + 0.01 * sum(bool(r.used) for r in self.open))
        return best

    def _check_detections(self) -> None:
        self.check_threads()
        grace = CONFIG.heartbeat_interval * (CONFIG.heartbeat_max_failures + 1)
        for p, since in enumerate(self.down_since):
            if since is None or self.clock.now() - since < grace:
                continue
            for m, manager in enumerate(self.managers):
                if not self.known_when_down[p][m]:
                    continue
                for request in self.open:
                    if (request.manager, request.prefill) != (m, p):
                        continue
                    status = manager.request_status.get(request.room)
                    if status not in (KVPoll.Success, KVPoll.Failed):
                        shown = "absent" if status is None else KVPoll(status).name
                        self.broke(
                            "node-failure-fails-rooms",
                            f"prefill {p} died at {since:g} s; at "
                            f"{self.clock.now():g} s decode {m}'s room {request.room} is {shown}",
                        )
                self.known[m][p] = False
            self.known_when_down[p] = [False] * len(self.managers)

    def _check_timeout_base(self, request: Request) -> None:
        """timeout-counts-from-send: a poll that turns a request WaitingForInput -> Failed, its
        prefill never away since the send (no restart, kill or slow registration to give up on),
        is its waiting timeout: a waiting timeout after its send_metadata returned."""
        returned, sent = request.send_returned_at, request.sent_at
        if returned is None or sent is None or request.aborted or self._away_since(request.prefill, sent):
            return  # no send that went out, an abort (it fails the request at once), or a prefill away
        waited = self.clock.now() - returned
        if waited < CONFIG.waiting_timeout:
            self.broke("timeout-counts-from-send", f"room {request.room} on decode {request.manager} failed "
                       f"while waiting for its KV {waited:g} s after its send_metadata returned (at "
                       f"{returned:g} s; called at {sent:g} s): the waiting timeout is "
                       f"{CONFIG.waiting_timeout:g} s")  # fmt: skip

    def _away_since(self, p: int, since: float) -> bool:
        """Whether prefill `p` restarted, died or was slow to register at or after `since`."""
        return any(end is None or end >= since for _, end, _ in self.outages[p]) or self.stuck[p]

    def _check_recovered(self, request: Request) -> None:
        """restart-recovered: a request whose prefill lost or held none of its messages (no drop,
        no pause) may fail only if its prefill was gone, during its life, long enough for the
        decode to give it up: a heartbeat interval for a kill (its probes fail), a waiting
        timeout for ranks slow to register (`/health` answers)."""
        if self._may_fail(request):
            return
        now, p = self.clock.now(), request.prefill
        longest = max((min(now, end if end is not None else now) - max(start, request.opened_at)
                       for start, end, _ in self.outages[p]), default=-1.0)  # fmt: skip
        gone = "it" if longest < 0 else f"it (its prefill gone for {longest:g} s at most)"
        self.broke("restart-recovered", f"room {request.room} failed although prefill {p} came back in time "
                   f"for {gone}: nothing else went wrong in this run")  # fmt: skip

    def _may_fail(self, request: Request) -> bool:
        now, p, opened, sent = self.clock.now(), request.prefill, request.opened_at, request.sent_at
        if any(until > opened for until in self.lossy[p]):
            return True  # a message to its prefill lost, or held past a waiting timeout
        for start, end, allowed in self.outages[p]:
            if min(now, end if end is not None else now) - max(start, opened) >= allowed:
                return True  # gone too long
        if request.longest_gap >= CONFIG.waiting_timeout:
            return True  # not polled for a waiting timeout: it could not even resend
        if (sent if sent is not None else now) - opened >= CONFIG.waiting_timeout:
            return True  # the scheduler itself left it unsent for a waiting timeout (a bootstrap timeout)
        # Its metadata, still on the wire, reached a new process on the same port, which knows no
        # such request and reports the transfer failed: a failure the prefill reported.
        return sent is not None and any(
            sent <= t < sent + self.net.latency for t in self.same_port_restarts[p]
        )

    def _check_bounded_wait(self, request: Request) -> None:
        since = request.waiting_since
        if since is not None and self.clock.now() - since > CONFIG.waiting_timeout + 2 * self.net.latency:
            self.broke("bounded-wait", f"room {request.room} has waited {self.clock.now() - since:g} s for "
                       f"prefill {request.prefill} (gone) and is still open: the wait ends at the waiting "
                       f"timeout ({CONFIG.waiting_timeout:g} s)")  # fmt: skip

    def _gone(self, p: int) -> bool:
        return self.down_since[p] is not None or self.stuck[p]

    def _check_failed_visible(self, m: int, room: int) -> None:
        status = self.managers[m].request_status.get(room)
        if status == KVPoll.Failed:
            for request in self.open:
                if (request.manager, request.room) == (m, room):
                    request.seen_failed = True
        if status != KVPoll.Failed:
            shown = "absent" if status is None else KVPoll(status).name
            self.broke("failed-visible", f"room {room} on decode {m} was failed while open and reads {shown}")

    def _check_invalidated(self, request: Request, why: str) -> None:
        pool = self.managers[request.manager].connection_pool
        kept = [key for key, entries in request.used.items() if any(pool.get(key) is e for e in entries)]
        if kept:
            self.broke("failed-entry-invalidated", f"room {request.room} failed ({why}) on cached "
                            f"entries that are still cached: {kept}")  # fmt: skip

    # -- helpers -------------------------------------------------------------------------------------------
    def _ensure(self, m: int, p: int) -> bool:
        ok = bool(
            self.call(lambda: self.managers[m].try_ensure_parallel_info(self.prefills[p].bootstrap_addr))
        )
        self.known[m][p] = self.known[m][p] or ok
        return ok

    def _prefix(self, request: Request) -> str:
        return f"{self.prefills[request.prefill].bootstrap_addr}_"

    def _pool_entries(self, request: Request) -> dict[str, Any]:
        """The cache entries for the request's prefill (upstream's key starts with its address)."""
        pool = self.managers[request.manager].connection_pool
        return {key: entry for key, entry in list(pool.items()) if key.startswith(self._prefix(request))}

    def _ports(self, request: Request) -> list[int]:
        return [int(info["rank_port"]) for info in request.receiver.bootstrap_infos or []]

    def _attributed(self, request: Request, call: Callable[[], Any], what: str) -> Any:
        """Run one receiver call; any cache entry it removes must be one the request used."""
        pool = self.managers[request.manager].connection_pool
        before = dict(pool)
        result = self.call(call, f"{what} of room {request.room}")
        self._note_used(request, before)
        removed = [key for key, entry in before.items() if pool.get(key) is not entry]
        looked_up = self._pool_entries(request).keys() | {
            k for k in before if k.startswith(self._prefix(request))
        }
        foreign = [
            key for key in removed
            if not any(e is before[key] for e in request.used.get(key, ()))
            and not (what == "init" and key in looked_up)
        ]  # fmt: skip
        if foreign:
            self.broke("invalidate-own-only", f"{what} of room {request.room} removed cache entries it "
                            f"never used: {foreign}")  # fmt: skip
        return result

    def _note_used(self, request: Request, before: dict[str, Any]) -> None:
        """A cache entry whose rank dicts the receiver now holds (`bootstrap_infos`) is one it used:
        a receiver may look the cache up again after `init` (a resend)."""
        held = {id(info) for info in getattr(request.receiver, "bootstrap_infos", None) or []}
        pool = self.managers[request.manager].connection_pool
        for key, entry in [*before.items(), *list(pool.items())]:
            if held and any(id(info) in held for info in entry):
                _add(request.used, key, entry)

    def call(self, call: Callable[[], Any], what: str = "a call") -> Any:
        try:
            return call()
        except Violation:
            raise
        except Exception as exc:
            raise Violation("no-raise", f"{what} raised {type(exc).__name__}: {exc}") from exc

    def broke(self, invariant: str, detail: str) -> None:
        """Raise `Violation` for an invariant this run checks (all by default, see `checking`)."""
        if self.checking is None or invariant in self.checking:
            raise Violation(invariant, detail)

    def note(self, lane: str, text: str) -> None:
        self.log.append((self.clock.now(), lane, text))


def _registering(method: str, path: str, query: Any, body: bytes) -> Reply:
    """A restarted prefill's bootstrap server before its ranks registered."""
    return Reply(503, "prefill not ready: 0 ranks registered")


def _failure_exception(receiver: Any) -> Any:
    """The scheduler takes a failed request's exception: ours returns it, upstream's raises it."""
    try:
        return receiver.failure_exception()
    except Exception as exc:
        if type(exc).__name__ != "KVTransferError":
            raise
        return exc


def _add(used: dict[str, list[Any]], key: str, entry: Any) -> None:
    if not any(e is entry for e in used.setdefault(key, [])):
        used[key].append(entry)


def _variant_classes(variant: ModuleType) -> list[type]:
    found = []
    for name in ("KVManager", "KVReceiver"):
        cls = getattr(variant, name, None)
        for klass in getattr(cls, "__mro__", ()):
            if klass is not object and klass not in found:
                found.append(klass)
    return found
