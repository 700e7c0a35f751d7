"""The "slow, not dead" question raised in review of PR #36029.

A reviewer asked what the fixed receiver's invalidation on the waiting timeout does
to a prefill that is only slow. This check answers it on the mock transport: one
request's answers from both prefill ranks are delayed past the 300 s waiting timeout
(no restart, no lost port). The request times out and fails in both forms; the fixed
receiver also drops its cache entry, so the next request fetches `/route` once more
(one GET per prefill rank) and re-registers, then every request succeeds. The late
answers arrive for a room that was already cleared and are dropped. The price of the
false trigger is that one extra fetch; nothing fails permanently.

`observe` reports `ok` when every request after the slow one succeeds (with the extra
fetches and re-registrations counted in the details) and `bug` otherwise. It is a
check, not a lesson: both forms recover, and the tests assert the difference in cost.
"""

from __future__ import annotations

from types import ModuleType

from reference import wire
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.world import CONFIG, TP_SIZE, open_world
from reference.status import KVPoll

ROOMS = (11, 12, 13, 14, 15)  # warm-up, the slow one, three after it


def observe(variant: ModuleType) -> Observation:
    with open_world(variant, "mock") as world:
        world.start()
        warm = world.request(ROOMS[0])
        registrations = sum(rank.registrations for rank in world.prefill.ranks)
        world.transport.delay(2 * CONFIG.waiting_timeout, count=TP_SIZE, tag=wire.STATUS)
        slow = world.request(ROOMS[1])
        dropped = world.inbox.dropped
        world.clock.advance(2 * CONFIG.waiting_timeout)  # the slow answers finally arrive
        world.pump()
        late_dropped = world.inbox.dropped - dropped
        after = [world.request(room) for room in ROOMS[2:]]
        registers = sum(rank.registrations for rank in world.prefill.ranks) - registrations
    details = {
        "warm_up": KVPoll(warm.status).name,
        "slow_request": KVPoll(slow.status).name,
        "slow_reason": slow.reason,
        "late_answers_dropped": late_dropped,
        "extra_route_fetches": sum(o.fetches for o in after),
        "re_registrations": registers,
        "successes_after": sum(o.status == KVPoll.Success for o in after),
    }
    if any(o.status != KVPoll.Success for o in after):
        return Observation("bug", f"a slow prefill caused a later failure: {details}", details=details)
    return Observation(
        "ok",
        f"slow request {details['slow_request']} after the waiting timeout; the next "
        f"{len(after)} succeeded after {details['extra_route_fetches']} extra /route fetches",
        details=details,
    )
