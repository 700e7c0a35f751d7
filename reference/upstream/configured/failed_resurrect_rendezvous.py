"""Check `rendezvous-abort-told` of `failed-resurrect`, in configuration `prefill_complete`
(upstream 0.5.23).

Under `--disaggregation-decode-allocation-policy prefill_complete` a decode receiver's
`init` fetches its prefill's ranks and sends each a BOOTSTRAP for the room; the prefill
runs the forward and holds the room's KV until the decode asks for it (its metadata) or
gives up on it (an ABORT for the room). A room's end on the decode is therefore something
the prefill must hear of exactly when the request ends unfinished, and never after the
request ended and its receiver was cleared:

- a request the decode stops waiting for (its wait for the prefill's forward timed out,
  or the scheduler aborted it while it waited) reads Failed and, by then, has told each
  prefill rank once, so the rank drops the room instead of holding its KV until its own
  timeout; the scheduler's aborts and clear after that tell no rank again. "By the time
  it reads Failed" is the timing `abort-reaches-prefill` (a stale-bootstrap invariant) asks
  of the default configuration's waiting timeout; under this policy upstream's `clear`
  also tells a room not yet told (its cleanup), so a decode that told the prefill only
  there would tell it one scheduler step later: this check calls that a bug;
- a request that ended (Success) and was cleared, aborted late (a late callback), tells
  the prefill nothing: the room is over, and its id may already belong to the next
  request, which an ABORT for the room would drop on the prefill. The check reuses the
  id and aborts the old receiver again with the next request of the room open.

What is driven: the variant's `KVManager` (built under the policy: its
`try_ensure_parallel_info` reads the prefill's policy) and `KVReceiver` (`init`, `poll`,
`abort`, `clear`) against a reference prefill of one rank (the policy needs attention
TP 1) whose bootstrap server announces the policy; the statuses the decode's handling of
the prefill's answers writes (`update_status`). What each rank was told is counted where
the mock network delivers to it; a BOOTSTRAP reaches the reference rank, which ignores it
(it speaks no rendezvous: no request here depends on a readiness it would send).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

from reference import wire
from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.prefill.mock import MockPrefill
from reference.status import KVPoll
from reference.transport.base import Reply
from reference.transport.mock import MockNetwork

POLICY = "prefill_complete"
CONFIG = ManagerConfig()  # upstream's defaults: the 300 s waiting timeout
TIMED_OUT, ABORTED, COMPLETED = 4501, 4502, 4503  # a room per request kind
SUCCESS_PATH = (KVPoll.WaitingForInput, KVPoll.Transferring, KVPoll.Success)


class _CountingNetwork(MockNetwork):
    """The mock network, counting the ABORTs delivered to a bound endpoint, per room."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.aborts: Counter[int] = Counter()

    def deliver(self, endpoint: str, frames: list[bytes]) -> None:
        if frames[:1] == [wire.ABORT] and self.is_bound(endpoint):
            try:
                message = wire.decode(frames)
            except ValueError:
                message = None  # a malformed ABORT tells the rank nothing
            if isinstance(message, wire.Abort):
                self.aborts[message.room] += 1
        super().deliver(endpoint, frames)


def _announcing(handle: Callable[..., Reply]) -> Callable[..., Reply]:
    """The bootstrap server's answers, its parallel info naming the prefill's policy (as a
    prefill started with `--disaggregation-decode-allocation-policy prefill_complete` registers it)."""

    def answer(method: str, path: str, query: dict[str, str], body: bytes) -> Reply:
        reply = handle(method, path, query, body)
        parallel = method == "GET" and path == "/route" and set(query.values()) == {"-1"}
        if parallel and reply.status == 200 and isinstance(reply.body, dict):
            return Reply(200, {**reply.body, "decode_allocation_policy": POLICY})
        return reply

    return answer


class _World:
    """One decode rank and a prefill of one rank, on the mock network and a virtual clock."""

    def __init__(self, variant: ModuleType) -> None:
        self.variant, self.clock = variant, VirtualClock()
        self.net = _CountingNetwork(self.clock)
        self.prefill = MockPrefill(self.net, "10.0.5.1:8998", tp_size=1)
        self.net.serve(self.prefill.bootstrap_addr, _announcing(self.prefill.table.handle))
        self.manager = variant.KVManager(self.net, CONFIG, self.clock)
        self.manager.listen(KVMemory(regions=1))
        if not self.manager.try_ensure_parallel_info(self.prefill.bootstrap_addr):
            raise RuntimeError(f"prefill {self.prefill.bootstrap_addr} never answered GET /route")

    def open(self, room: int) -> Any:
        receiver = self.variant.KVReceiver(self.manager, self.prefill.bootstrap_addr, room)
        receiver.init(0)
        return receiver

    def close(self) -> None:
        self.manager.close()
        self.prefill.close()
        self.net.close()


def _gave_up(world: _World, room: int, timed_out: bool) -> str:
    """The problem ("" if none) with a request the decode stopped waiting for."""
    receiver = world.open(room)
    early = KVPoll(receiver.poll())
    if timed_out:
        world.clock.advance(CONFIG.waiting_timeout)
    else:
        receiver.abort()  # the scheduler's abort while it waits for the prefill
    status = KVPoll(receiver.poll())
    how = "timed out waiting for the prefill" if timed_out else "aborted while waiting for the prefill"
    if early in (KVPoll.Success, KVPoll.Failed) or status != KVPoll.Failed:
        return f"room {room}: {early.name} once bootstrapped, then {how}: {status.name}"
    told = world.net.aborts[room]
    receiver.abort()
    receiver.abort()
    receiver.clear()  # the scheduler's end of the request
    again = world.net.aborts[room]
    if told != 1 or again != told:
        return (
            f"room {room} {how}: its prefill rank told {told} ABORTs when it read Failed, {again} after two "
            "more aborts and its clear"
        )
    return ""


def _ended_then_reused(world: _World) -> str:
    """The problem ("" if none) with a late abort of a request that ended and was cleared."""
    old = world.open(COMPLETED)
    for status in SUCCESS_PATH:  # what the decode's handling of the prefill's answers writes
        world.manager.update_status(COMPLETED, status)
    seen = KVPoll(old.poll())
    old.clear()
    old.abort()  # late: its request ended and was cleared
    late = world.net.aborts[COMPLETED]
    new = world.open(COMPLETED)  # the room's id reused by the next request
    old.abort()
    reused = world.net.aborts[COMPLETED] - late
    new.clear()
    if seen != KVPoll.Success or late or reused:
        return (
            f"room {COMPLETED} read {seen.name} and was cleared; its late abort told the prefill rank {late} "
            f"ABORTs, again with the room's next request open {reused}"
        )
    return ""


def rendezvous_abort_told(variant: ModuleType, _options: Options) -> Observation:
    world = _World(variant)
    try:
        problems = [
            _gave_up(world, TIMED_OUT, timed_out=True),
            _gave_up(world, ABORTED, timed_out=False),
            _ended_then_reused(world),
        ]
    finally:
        world.close()
    named = f"configuration {getattr(getattr(variant, 'CONFIGURATION', None), 'name', '?')}"
    problems = [problem for problem in problems if problem]
    if problems:
        return Observation("bug", f"{named}: {'; '.join(problems)}")
    return Observation(
        "ok",
        f"{named}: a bootstrapped request that timed out or was aborted waiting for the prefill told its "
        "rank once (later aborts none); a request that ended and was cleared told it nothing when aborted "
        "late, its room reused or not",
    )
