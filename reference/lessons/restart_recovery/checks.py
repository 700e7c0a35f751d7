"""Checks of lesson `restart-recovery`: a request caught in flight by a prefill's death.

The story and the simulation lose a prefill before a request's send or right after it;
these hand-built scenarios put the loss where those never do (the hardened design's items 1
to 3, in the lesson README), and one sets the waiting timeout to 0:

- `resend-waits-for-every-rank`: TP 2; one rank answered, the other had not, when the
  prefill restarted. The request is resent to the successor (item 3: "forgets any partial
  answers"); it may read Success only once both successor ranks wrote its pages.
- `late-loss-recovers`: the prefill dies one second before the request's waiting timeout
  (its ranks paused since the send, so nothing answered) and is back two seconds later,
  under a heartbeat interval: the request succeeds (the `restart-recovered` invariant:
  such a request fails only if its prefill was gone for a heartbeat interval).
- `done-loss-keeps-cache`: CP 2; both ranks answered, then one CP rank's process dies
  before the scheduler's poll. The request succeeds and the other CP rank's generation,
  whose process lives, stays cached (item 1 drops only generations naming the dead
  endpoint; item 3 resends only a request still waiting).
- `no-wait-at-zero-timeout`: the wait for a restarting prefill lasts until the waiting
  timeout (item 2); at 0 nothing waits: a send that raised on the old ports fails the request
  at its next poll (the simulation's timeouts are all 300 s).

Each runs on `stale_bootstrap.check_world` (the mock network, whose unbind of a
connected endpoint is the peer loss, and a virtual clock), through the variant protocol
only; what each prefill rank did is read from the mock prefill (`transfers`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from reference import wire
from reference.config import ManagerConfig
from reference.harness.checks import Check
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import CONFIG, DONE, CheckWorld, check_world
from reference.lessons.stale_bootstrap.checks_triggers import judged
from reference.status import KVPoll

PR = "https://github.com/sgl-project/sglang/pull/36029"
PAUSED = 10 * CONFIG.waiting_timeout  # a paused rank's messages wait this long (it dies first)
LATE = 1.0  # seconds the successor's rank 0 takes to get the resent metadata


def _transfers(world: CheckWorld) -> list[int]:
    return [rank.transfers for rank in world.prefills[0].ranks]


def _end(world: CheckWorld, receiver: Any) -> KVPoll:
    """The request's end once every held message is due, or at its waiting timeout."""
    world.clock.advance(LATE)
    world.net.pump()
    status = KVPoll(receiver.poll())
    return status if status in DONE else world.settle(receiver)


@judged
def resend_waits_for_every_rank(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", tp=2) as world:
        prefill = world.prefills[0]
        world.net.hold(prefill.endpoints[1], until=world.clock.now() + PAUSED)  # rank 1 paused
        receiver = world.open()
        world.send(receiver)
        before = KVPoll(receiver.poll())  # rank 0 answered, rank 1 has not
        prefill.restart()  # the paused rank dies with its process, the metadata unread
        world.net.delay(LATE, endpoint=prefill.endpoints[0], tag=wire.METADATA)
        first = KVPoll(receiver.poll())  # a resend reaches successor rank 1 now, rank 0 later
        done_then = _transfers(world)
        status = _end(world, receiver)
        done = _transfers(world)
        room = receiver.bootstrap_room
        receiver.clear()
    if before != KVPoll.WaitingForInput:
        return Observation("unknown", f"room {room} read {before.name} with one of its two ranks answered")
    if first == KVPoll.Success and done_then != [1, 1]:
        return Observation(
            "bug",
            f"room {room}: a rank answered, then the prefill restarted; resent, the request read Success "
            f"with successor ranks' transfers {done_then} (the dead process's answer counted for the "
            "successor's rank still writing its pages)",
        )
    if status != KVPoll.Success or done != [1, 1]:
        return Observation(
            "bug",
            f"room {room}: a rank answered, then the prefill restarted: {status.name} (successor ranks' "
            f"transfers {done}), not resent and answered by both successor ranks",
        )
    return Observation(
        "ok",
        f"room {room}: one rank answered, then the prefill restarted; resent, it read {first.name} with "
        f"successor transfers {done_then}, Success once both successor ranks wrote its pages",
    )


@judged
def late_loss_recovers(variant: ModuleType, options: Options) -> Observation:
    gone_for = 2.0  # seconds the prefill is away: under one heartbeat interval
    with check_world(variant, "upstream", tp=2) as world:
        prefill = world.prefills[0]
        for endpoint in prefill.endpoints:  # paused: nothing answers before the death
            world.net.hold(endpoint, until=world.clock.now() + PAUSED)
        receiver = world.open()
        world.send(receiver)
        world.clock.advance(CONFIG.waiting_timeout - 1.0)
        seen = [KVPoll(receiver.poll())]
        prefill.kill()  # one second before the request's waiting timeout
        for _ in range(int(gone_for)):  # the scheduler polls every second meanwhile
            seen.append(KVPoll(receiver.poll()))
            world.clock.advance(1.0)
        prefill.start()
        seen.append(KVPoll(receiver.poll()))
        status = seen[-1] if seen[-1] in DONE else world.settle(receiver)
        room = receiver.bootstrap_room
        reason = world.manager.failure_records.get(room)
        receiver.clear()
    shown = ", ".join(s.name for s in seen)
    if seen[0] != KVPoll.WaitingForInput:
        return Observation("unknown", f"room {room} read {seen[0].name} while its ranks were paused")
    if status != KVPoll.Success:
        return Observation(
            "bug",
            f"room {room}: its prefill died {CONFIG.waiting_timeout - 1:g} s after the send and was back "
            f"{gone_for:g} s later (under the {CONFIG.heartbeat_interval:g} s heartbeat interval); polls "
            f"read {shown}, then {status.name} ({reason})",
        )
    return Observation(
        "ok",
        f"room {room}: its prefill died {CONFIG.waiting_timeout - 1:g} s after the send and was back "
        f"{gone_for:g} s later; polls read {shown}: resent to the successor, Success",
    )


@judged
def done_loss_keeps_cache(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", tp=1, cp=2) as world:
        receiver = world.open()
        world.send(receiver)  # both CP ranks answer: the room reads Success in the table
        dead = world.prefills[0].endpoints[1]
        dead_port = int(dead.rsplit(":", 1)[1])
        live = {key: ports for key, ports in world.ports().items() if dead_port not in ports}
        world.net.unbind(dead)  # CP rank 1's process dies before the scheduler's poll
        status = KVPoll(receiver.poll())
        after = world.ports()
        room = receiver.bootstrap_room
        receiver.clear()
    if not live:
        return Observation("unknown", f"room {room}: no cached entry of the live CP rank after the request")
    lost = {key: ports for key, ports in live.items() if after.get(key) != ports}
    if status != KVPoll.Success or lost:
        what = f"entries of the live CP rank dropped: {', '.join(lost)}" if lost else "entries kept"
        return Observation(
            "bug", f"room {room}: both CP ranks answered, then CP rank 1 died: {status.name}, {what}"
        )
    return Observation(
        "ok",
        f"room {room}: both CP ranks answered, then CP rank 1 died: Success, the live CP rank's entry "
        f"{', '.join(live)} still cached",
    )


@judged
def no_wait_at_zero_timeout(variant: ModuleType, options: Options) -> Observation:
    """The waiting timeout bounds the wait for a restarting prefill (item 2), at 0 too: there
    nothing waits. Fail-fast sockets; a request inits, its prefill restarts on new ports, and
    the metadata send to the old ports raises: the request reads Failed at its next poll, with
    a reason recorded, as the fixed form's does (it never waits)."""
    with check_world(variant, "fail-fast", config=ManagerConfig(waiting_timeout=0.0)) as world:
        receiver = world.open()
        room = receiver.bootstrap_room
        old = list(world.prefills[0].rank_ports)
        world.prefills[0].restart()  # new ports; the receiver holds the old ones
        world.send(receiver)
        status = KVPoll(receiver.poll())
        reason = world.manager.failure_records.get(room)
    if status != KVPoll.Failed or not reason:
        return Observation(
            "bug", f"room {room}: waiting timeout 0, its send to the old ports {old} raised; at its next "
            f"poll it reads {status.name}, reason {reason!r}: it waits although no wait is allowed",
        )  # fmt: skip
    shown = f"room {room}: waiting timeout 0, its send to the old ports raised"
    return Observation("ok", f"{shown}: Failed, {reason}")


HARDEN = "HARDEN(restart-recovery), residual after " + PR
CHECKS = (
    Check(
        "resend-waits-for-every-rank",
        "a request resent after its prefill restarted mid-answer reads Success only once every "
        "successor rank wrote its pages",
        f"{HARDEN}: item 3, the resend forgets any partial answers",
        resend_waits_for_every_rank,
    ),
    Check(
        "late-loss-recovers",
        "a prefill that dies just before a request's waiting timeout and is back within a heartbeat "
        "interval: the request succeeds",
        f"{HARDEN}: items 2 and 3, the wait for the successor and the resend (invariant restart-recovered)",
        late_loss_recovers,
    ),
    Check(
        "done-loss-keeps-cache",
        "a CP rank that dies after its request's answers arrived: the request succeeds and the other CP "
        "rank's entry stays cached",
        f"{HARDEN}: item 1 drops only generations naming the dead endpoint, item 3 resends only a "
        "request still waiting",
        done_loss_keeps_cache,
    ),
    Check(
        "no-wait-at-zero-timeout",
        "with the waiting timeout at 0, a request whose metadata send raised on its restarted prefill's old "
        "ports reads Failed at its next poll, with a reason: nothing waits",
        f"{HARDEN}: item 2, the wait for the successor lasts until the waiting timeout (0: no wait)",
        no_wait_at_zero_timeout,
    ),
)
