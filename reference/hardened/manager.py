"""Status-manager methods touched by two upstream fixes.

- `update_status`: lesson `failed-resurrect`, PR #24539 (first in sglang 0.5.12)
- `_handle_node_failure`: lesson `live-set-race`, PR #36351 (first in sglang 0.5.19)

`reference/buggy/manager.py` is the code before both fixes, `reference/fixed/manager.py`
after; their diff is exactly the two fixes. Everything else is in `common/manager.py`.
"""

import itertools  # HARDEN(room-reuse): lifecycle ids; logging: HARDEN(supervised-loops)
import logging
import threading  # HARDEN(late-kv-write): the held pages' lock
import traceback
from typing import Any

from reference.common.manager import ManagerBase
from reference.status import KVPoll

FAILED, BOOTSTRAPPING = KVPoll.Failed, KVPoll.Bootstrapping  # HARDEN(room-reuse): no enum lookups per call
HOLD_FOR = 600.0  # HARDEN(late-kv-write): seconds a failed request's pages wait for its ranks' answers
log = logging.getLogger("reference.hardened.manager")  # HARDEN(supervised-loops): loops log, never vanish


class KVManager(ManagerBase):
    def __init__(self, *args, **kwargs) -> None:  # HARDEN(restart-recovery): learn of dead peers at once
        super().__init__(*args, **kwargs)
        self.room_lifecycle: dict[int, int] = {}  # which request owns each open room id
        self.awaiting_transfer: set[int] = set()  # rooms whose current request sent its metadata
        self.receivers: dict[int, Any] = {}  # the open request of each room (a receiver)
        self._lifecycles = itertools.count(1)
        self.heartbeat_errors: list[str] = []
        self.answers: dict[int, int] = {}  # HARDEN(late-kv-write): statuses counted per open request
        self.held_pages: dict[int, tuple[list[int], int, float]] = {}  # room -> (pages, answers due, until)
        self._held_lock = threading.Lock()
        self.last_heard: dict[str, float] = {}  # HARDEN(bootstrap-partition): a status from its ranks
        watch = getattr(self.transport, "on_peer_gone", None)
        if watch is not None:
            watch(self._on_peer_gone)

    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if status == BOOTSTRAPPING:  # HARDEN(room-reuse): only an opening status starts a lifecycle
            self._open_lifecycle(bootstrap_room)
            return
        if bootstrap_room not in self.request_status:
            if status == KVPoll.Failed:  # FIX(failed-resurrect): a cleared room stays cleared
                return
            return  # HARDEN(room-reuse): nor does any other status create a room
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        elif self.request_status[bootstrap_room] == FAILED:  # HARDEN(room-reuse): Failed is terminal
            return
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)

    def _open_lifecycle(self, room: int) -> None:  # HARDEN(room-reuse): leftovers of the last request go
        if room in self.failure_records:
            with self.failure_lock:
                self.failure_records.pop(room, None)
        self.prefill_response_tracker.pop(room, None)
        self.awaiting_transfer.discard(room)
        self.answers.pop(room, None)  # HARDEN(late-kv-write)
        self.room_lifecycle[room] = next(self._lifecycles)
        self.request_status[room] = BOOTSTRAPPING

    def owns(self, room: int, lifecycle: int) -> bool:  # HARDEN(room-reuse): is this request still the room's
        return self.room_lifecycle.get(room) == lifecycle

    def expect_transfer(self, room: int) -> None:  # HARDEN(room-reuse): metadata sent, answers now count
        self.awaiting_transfer.add(room)

    def accepts_transfer_status(self, bootstrap_room: int) -> bool:  # HARDEN(room-reuse)
        self._release_expired_pages()  # HARDEN(late-kv-write)
        if self._answer_for_held_pages(bootstrap_room):  # HARDEN(late-kv-write): a cleared request's
            return False  # late answer: its rank is done with those pages
        accepted = bootstrap_room in self.awaiting_transfer and bootstrap_room in self.request_status
        if accepted:  # HARDEN(late-kv-write): one status message from one rank
            self.answers[bootstrap_room] = self.answers.get(bootstrap_room, 0) + 1
            addr = self.room_to_bootstrap_addr.get(bootstrap_room)  # HARDEN(bootstrap-partition)
            if addr is not None:
                self.last_heard[addr] = self.clock.now()
        return accepted

    def hold_pages(self, room: int, pages: list[int], due: int) -> None:  # HARDEN(late-kv-write): a
        until = self.clock.now() + HOLD_FOR  # request ended with `due` ranks still holding its metadata;
        with self._held_lock:  # held for HOLD_FOR at most, so a lost answer keeps no memory for ever
            self.held_pages[room] = (list(pages), due, until)

    def _release_expired_pages(self) -> None:  # HARDEN(late-kv-write): let go of pages whose answers
        now = self.clock.now()  # are HOLD_FOR overdue (on the next status, probe or allocation)
        with self._held_lock:
            for room in [room for room, (_, _, until) in self.held_pages.items() if until <= now]:
                del self.held_pages[room]

    def pages_in_doubt(self) -> set[int]:  # HARDEN(late-kv-write): pages a prefill may still write;
        self._release_expired_pages()
        with self._held_lock:  # the scheduler hands them to no new request
            return {page for pages, _, _ in self.held_pages.values() for page in pages}

    def _answer_for_held_pages(self, room: int) -> bool:  # HARDEN(late-kv-write)
        if room not in self.held_pages or room in self.awaiting_transfer:
            return False  # (a reopened room's own request waits for answers: they are its own)
        with self._held_lock:
            pages, due, until = self.held_pages[room]
            if due <= 1:
                del self.held_pages[room]
            else:
                self.held_pages[room] = (pages, due - 1, until)
        return True

    def record_failure(self, bootstrap_room: int, reason: str) -> None:  # HARDEN(failure-records)
        with self.failure_lock:
            if bootstrap_room in self.request_status:  # a late abort of a cleared room leaves nothing
                self.failure_records[bootstrap_room] = reason

    def clear(self, bootstrap_room: int) -> None:  # HARDEN(failure-records): a cleared room leaves nothing
        self.request_status.pop(bootstrap_room, None)
        self.receivers.pop(bootstrap_room, None)
        self.room_lifecycle.pop(bootstrap_room, None)
        self.awaiting_transfer.discard(bootstrap_room)
        self.answers.pop(bootstrap_room, None)  # HARDEN(late-kv-write)
        with self.failure_lock:
            self.failure_records.pop(bootstrap_room, None)
        with self.connection_lock:
            addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
            rooms = self.addr_to_rooms_tracker.get(addr) if addr is not None else None
            if rooms is not None:
                rooms.discard(bootstrap_room)

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:  # HARDEN(stale-tracker)
        with self.connection_lock:  # one locked step: never a reference kept across a failure
            addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
            if addr is None:
                return
            rooms = self.addr_to_rooms_tracker.get(addr)
        self.hooks.fire("cleanup_room_tracking.after_get", bootstrap_room)
        with self.connection_lock:
            if rooms is None or self.addr_to_rooms_tracker.get(addr) is not rooms:
                return  # the set was replaced (a failure popped it): the new one is not ours to empty
            rooms.discard(bootstrap_room)
            if not rooms:
                self.addr_to_rooms_tracker.pop(addr, None)

    def _on_peer_gone(self, endpoint: str) -> None:  # HARDEN(restart-recovery): drop every cached
        with self.connection_lock:  # generation that sends to the dead endpoint, before any request does
            for key, infos in list(self.connection_pool.items()):
                if any(f"tcp://{i.get('rank_ip')}:{i.get('rank_port')}" == endpoint for i in infos):
                    del self.connection_pool[key]
        for receiver in list(self.receivers.values()):  # requests waiting on it: resend on their next poll
            if receiver.sent_to(endpoint):
                receiver.lost_peer = True

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        if self._ranks_answer(failed_bootstrap_addr):  # HARDEN(bootstrap-partition): only its bootstrap
            return  # server is unreachable: keep its rooms; the next probe asks again
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = list(self.addr_to_rooms_tracker.get(addr, ()))  # FIX(live-set-race): snapshot
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)

    def _ranks_answer(self, addr: str) -> bool:  # HARDEN(bootstrap-partition): a rank of this prefill
        heard = self.last_heard.get(addr)  # delivered a status within the heartbeat's detection window
        window = self.config.heartbeat_interval * self.config.heartbeat_max_failures
        return heard is not None and self.clock.now() - heard <= window

    def _probe(self, addr: str) -> None:  # HARDEN(supervised-loops): a probe that raises is logged
        self._release_expired_pages()  # HARDEN(late-kv-write)
        try:  # with its traceback and the heartbeat goes on (upstream: the thread ends silently)
            super()._probe(addr)
        except Exception as exc:
            self.heartbeat_errors.append(f"{type(exc).__name__}: {exc}")
            log.error(
                "heartbeat probe of %s raised; the heartbeat goes on:\n%s", addr, traceback.format_exc()
            )
