"""What the two status-manager fixes cost per call, buggy against fixed.

- `update_status` (lesson `failed-resurrect`): the fix adds one comparison, and only on
  the path where the room is absent. Three cases: a write to an existing room (the
  code is identical in both forms: a control, its ratio shows the noise floor), the
  first write of a new room (pays the added comparison), and a late Failed after
  `clear()` (buggy re-inserts the room, fixed returns early).
- `_handle_node_failure` (lesson `live-set-race`): the fix copies the affected rooms
  into a list while `connection_lock` is held. Swept over 10, 1,000 and 100,000 rooms
  tracked on the failed prefill; besides the whole call we record how long the lock
  was held, which is what other threads wait on.
"""

from __future__ import annotations

import statistics
import threading
import time
from types import ModuleType

import pytest

from benchmarks.conftest import label
from benchmarks.modes import Mode
from reference.hooks import Hooks
from reference.status import KVPoll
from reference.transport.mock import MockNetwork


def _manager(module: ModuleType):
    return module.KVManager(MockNetwork(), hooks=Hooks())


def _write_all(update, rooms: range, status: KVPoll) -> None:
    for room in rooms:
        update(room, status)


UPDATE_CASES = {
    # case: (rooms present before the round, status written)
    "update_status/existing-room": (True, KVPoll.WaitingForInput),
    "update_status/new-room": (False, KVPoll.Bootstrapping),
    "update_status/late-failed-after-clear": (False, KVPoll.Failed),
}


@pytest.mark.parametrize("case", list(UPDATE_CASES))
def test_update_status(benchmark, variant, mode: Mode, case: str) -> None:
    name, module = variant
    present, status = UPDATE_CASES[case]
    manager = _manager(module)
    rooms = range(mode.batch)

    def setup():
        manager.request_status = dict.fromkeys(rooms, KVPoll.Bootstrapping) if present else {}
        return (manager.update_status, rooms, status), {}

    label(benchmark, case, name, mode.batch)
    benchmark.pedantic(_write_all, setup=setup, rounds=mode.rounds, warmup_rounds=1)
    resurrected = len(manager.request_status) if not present else 0
    benchmark.extra_info["rooms_left_after_round"] = resurrected


class HoldTimer:
    """A drop-in `connection_lock` that records how long each acquisition held it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since = 0
        self.holds: list[int] = []

    def __enter__(self) -> HoldTimer:
        self._lock.acquire()
        self._since = time.perf_counter_ns()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.holds.append(time.perf_counter_ns() - self._since)
        self._lock.release()


def _tracked_manager(module: ModuleType, addrs: list[str], rooms_per_addr: int):
    manager = _manager(module)
    room = 0
    for index, addr in enumerate(addrs):
        manager.add_prefill(addr)
        manager.connection_pool[f"{addr}_0_0_0"] = [{"rank_ip": "127.0.0.1", "rank_port": 20000 + index}]
        for _ in range(rooms_per_addr):
            manager.track_room(addr, room)
            manager.update_status(room, KVPoll.WaitingForInput)
            room += 1
    manager.connection_lock = HoldTimer()
    return manager


def _fail_all(manager, addrs: list[str]) -> None:
    for addr in addrs:
        manager._handle_node_failure(addr)


def _prefills_per_round(rooms: int) -> int:
    """Several failed prefills per round for small sizes, so a round is well above timer noise.

    At most 20: `_forget_prefill_locked` scans every pool key under the lock, so many
    prefills in one pool would make the 10-room case measure the scan, not the rooms.
    """
    return max(1, min(20, 1_000 // rooms))


@pytest.mark.parametrize("rooms", [10, 1_000, 100_000], ids=lambda n: f"{n}-rooms")
def test_handle_node_failure(benchmark, variant, mode: Mode, rooms: int) -> None:
    if rooms not in mode.room_counts:
        pytest.skip(f"{rooms} rooms not in the {mode.name} mode")
    name, module = variant
    addrs = [f"10.0.{i // 250}.{i % 250}:8998" for i in range(_prefills_per_round(rooms))]
    rounds = mode.failure_rounds if rooms >= 100_000 else mode.rounds // 4 or 1
    holds: list[int] = []
    last: list = []  # only the latest manager is kept alive: 100,000 rooms each

    def setup():
        if last:
            holds.extend(last.pop().connection_lock.holds)
        last.append(_tracked_manager(module, addrs, rooms))
        return (last[0], addrs), {}

    label(benchmark, f"_handle_node_failure/{rooms}-rooms", name, len(addrs), rooms=rooms)
    benchmark.pedantic(_fail_all, setup=setup, rounds=rounds)
    holds.extend(last[0].connection_lock.holds)
    failed = sum(s == KVPoll.Failed for s in last[0].request_status.values())
    benchmark.extra_info.update(lock_hold_ns_median=statistics.median(holds), rooms_failed_last_round=failed)
    assert failed == rooms * len(addrs), "every tracked room must end Failed"
