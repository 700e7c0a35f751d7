"""Checks: what a dead prefill, or one failing rank, leaves behind on the decode.

`dead-prefill-disconnected`: the cache PR #36029 invalidates has a second way out: the
heartbeat declares a prefill dead (`heartbeat_max_failures` missed `/health` probes in a
row) and the failure handler drops its cached entries and disconnects every rank endpoint
they named (upstream: `CommonKVReceiver.disconnect_endpoint`, from sglang 0.5.14; the
transport is told: `MockNetwork.disconnected`), so a request after the prefill comes back
connects afresh. A variant that already dropped those entries when the ranks' connections
closed (the hardened form) has nothing left to disconnect there.
`send-after-failed-init`: a `send_metadata` after a failed init raises nothing.
`send-failure-stops-sends`: a metadata send that fails on one rank stops the request's
sends there (upstream returns from its `except zmq.ZMQError`). The heartbeat runs in its
own thread on the world's virtual clock; nothing sleeps.
"""

from __future__ import annotations

from types import ModuleType

from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import CONFIG, PAGES, check_world, show
from reference.lessons.stale_bootstrap.checks_triggers import judged
from reference.status import KVPoll

TP = 2


@judged
def dead_prefill_disconnected(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", tp=TP) as world:
        warm = world.request()
        prefill = world.prefills[0]
        world.manager.start_heartbeat()
        world.clock.wait_for_sleepers(1)
        prefill.kill()
        world.clock.advance(CONFIG.heartbeat_interval)  # one probe missed: not dead yet
        named = {f"tcp://{prefill.rank_ip}:{port}" for ports in world.ports().values() for port in ports}
        world.clock.advance(CONFIG.heartbeat_interval * (CONFIG.heartbeat_max_failures - 1))
        kept = sorted(rank for rank in named if rank not in world.net.disconnected)
        cached = world.stale(prefill.rank_ports)
    if warm.status != KVPoll.Success:
        return Observation("unknown", f"the warm-up request ended {warm.status.name}: {warm.reason}")
    shown = ", ".join(rank.removeprefix("tcp://") for rank in kept)
    problems = [f"the sockets to its ranks {shown} were never disconnected"] if kept else []
    if cached:
        problems.append(f"connection_pool still names its ports: {show(cached)}")
    if problems:
        return Observation("bug", f"after the heartbeat declared the prefill dead: {'; '.join(problems)}")
    return Observation(
        "ok",
        f"the prefill died: of its {TP} rank endpoints, the {len(named)} still cached after one missed "
        f"probe were disconnected by the {CONFIG.heartbeat_max_failures}nd; no cached entry names them",
    )


@judged
def send_after_failed_init(variant: ModuleType, options: Options) -> Observation:
    """The prefill is gone before a request's init (its GET /route refused): a
    `send_metadata` on that receiver raises nothing into the scheduler, sends nothing, and
    the request ends Failed (at once or at its waiting timeout) with its reason recorded."""
    with check_world(variant, "upstream", tp=TP) as world:
        world.prefills[0].kill()
        receiver = world.open()
        room = receiver.bootstrap_room
        try:
            receiver.send_metadata(list(PAGES))
        except Exception as exc:  # what the scheduler would get from its call
            return Observation("bug", f"send_metadata after a failed init raised {type(exc).__name__}: {exc}")
        status = world.settle(receiver)
        reason = world.manager.failure_records.get(room)
    if status != KVPoll.Failed or not reason:
        return Observation(
            "bug", f"send_metadata after a failed init: request {status.name}, reason {reason!r}"
        )
    return Observation("ok", f"send_metadata after a failed init raised nothing; request Failed: {reason}")


@judged
def send_failure_stops_sends(variant: ModuleType, options: Options) -> Observation:
    """Two ranks, the cache warm; then one rank's connect fails (EMFILE) when the next
    request sends its metadata: the request does not succeed (it fails, or waits for its
    prefill), and no rank is sent its metadata after that failure (a rank that got it would
    write KV into pages the scheduler frees)."""
    with check_world(variant, "upstream", tp=TP) as world:
        world.request()
        refused = world.prefills[0].endpoints[0]
        world.net.refused.add(refused)
        receiver = world.open()
        start = len(world.net.trail)
        world.send(receiver)
        status = KVPoll(receiver.poll())
        trail = world.net.trail[start:]
    if ("refused", refused) not in trail:
        return Observation("unknown", f"the request never connected to {refused.removeprefix('tcp://')}")
    after = [endpoint for what, endpoint in trail[trail.index(("refused", refused)) :] if what == "metadata"]
    if status == KVPoll.Success or after:
        shown = ", ".join(e.removeprefix("tcp://") for e in after) or "none"
        return Observation(
            "bug", f"a send whose connect failed: request {status.name}; metadata sent after it to {shown}"
        )
    return Observation(
        "ok", "a send whose connect failed failed the request, and no rank was sent it after that"
    )
