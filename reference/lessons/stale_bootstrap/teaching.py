"""Live experiments for lesson `stale-bootstrap` (PR #36029), beyond its scenario.

Each builds one decode manager facing a `MockPrefill` on the mock network and drives
real receivers of the form it is given:

- `replacement_race`: two receivers share the cached generation; the prefill restarts;
  one fails and a third installs the new generation; then the second, still holding
  the old one, fails too. Does its invalidation delete the newer generation? With
  identity (`is`) no; with a tempting by-key fix (`BY_KEY`), yes. (The exercise.)
- `stale_sockets`: after each restart, the PUSH sockets to the dead ports stay in the
  socket cache; the fix drops the cache entry, not the sockets (as upstream).
- `slow_prefill`: the review question "what if the prefill is only slow?", answered by
  `reference/lessons/stale_bootstrap/slow_prefill.py`.

And for the notebook's mechanism cells: `Bench`, a decode manager and one restartable
prefill rank on the mock network, on which the notebook calls `KVReceiver(...)`,
`init()`, `send_metadata()`, `poll()` and `clear()` itself; `restart_timeline`, one
request stream across a restart in virtual seconds with every heartbeat probe (all
answered); and the source of the code that orders two receivers in the checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import reference.buggy
import reference.fixed
from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.harness.result import Event, Result, Verdict
from reference.lessons.stale_bootstrap import check_world, checks_sharing, scripted
from reference.lessons.stale_bootstrap import slow_prefill as slow_check
from reference.lessons.stale_bootstrap.world import CONFIG, open_world
from reference.lessons.stale_bootstrap.wrong_fixes import by_key
from reference.prefill.mock import MockPrefill
from reference.status import KVPoll
from reference.teaching.exercises import Feedback, check_choice
from reference.teaching.plots import Span
from reference.teaching.sources import Source, source
from reference.transport.mock import MockNetwork, MockPushSocket

ADDR = "10.0.0.1:8998"
KEY = f"{ADDR}_0_0_0"


BY_KEY = by_key  # the tempting wrong fix of the exercise: invalidate by key, whatever is cached now


class SocketCountingNetwork(MockNetwork):
    """The mock network, counting the PUSH sockets the decode keeps open."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.open_sockets: set[str] = set()

    def connect(self, endpoint: str) -> MockPushSocket:
        self.open_sockets.add(endpoint)
        return super().connect(endpoint)

    def disconnect(self, endpoint: str) -> None:
        self.open_sockets.discard(endpoint)
        super().disconnect(endpoint)


def _world(variant: Any) -> tuple[SocketCountingNetwork, MockPrefill, Any]:
    clock = VirtualClock()
    net = SocketCountingNetwork(clock)
    prefill = MockPrefill(net, ADDR, tp_size=1)
    manager = variant.KVManager(net, ManagerConfig(), clock)
    manager.listen(KVMemory(regions=1))
    if not manager.try_ensure_parallel_info(ADDR):
        raise RuntimeError(f"the mock prefill at {ADDR} did not answer GET /route")
    return net, prefill, manager


def _receiver(variant: Any, manager: Any, room: int) -> Any:
    receiver = variant.KVReceiver(manager, ADDR, room)
    receiver.init(0)
    return receiver


def _request(variant: Any, manager: Any, room: int) -> KVPoll:
    receiver = _receiver(variant, manager, room)
    if receiver.poll() != KVPoll.Failed:
        receiver.send_metadata([0, 1])
    status = KVPoll(receiver.poll())
    receiver.clear()
    return status


def _name(variant: Any) -> str:
    return str(variant.__name__).rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Race:
    variant: str
    third_uses_new_ports: bool  # r3 installed the new generation
    survived: bool  # the new generation is still cached after r2's invalidation
    fourth_fetches: int  # GET /route calls the next request made
    fourth: str  # how the next request ended

    def __str__(self) -> str:
        if not self.third_uses_new_ports:
            middle = "r3 reused the stale generation, no new one was ever cached"
        else:
            middle = f"r3 cached the new ports; they survived r2's invalidation: {self.survived}"
        return (
            f"{self.variant:>6}: {middle}; r4 fetched /route {self.fourth_fetches}x and ended {self.fourth}"
        )


def replacement_race(variant: Any) -> Race:
    net, prefill, manager = _world(variant)
    r1, r2 = _receiver(variant, manager, 1), _receiver(variant, manager, 2)  # both on generation 1
    prefill.restart()
    r1.send_metadata([0])  # fails on the dead port
    r3 = _receiver(variant, manager, 3)
    newer = manager.connection_pool.get(KEY)
    r2.send_metadata([0])  # fails too, still holding generation 1
    fetches = net.route_fetches
    fourth = _request(variant, manager, 4)
    uses_new = [info["rank_port"] for info in r3.bootstrap_infos] == prefill.rank_ports
    survived = newer is not None and manager.connection_pool.get(KEY) is newer
    return Race(_name(variant), uses_new, survived, net.route_fetches - fetches, fourth.name)


def stale_sockets(variant: ModuleType, restarts: int = 3) -> str:
    """Restart the prefill `restarts` times, two requests after each; count dead-port sockets.

    Fewer dead sockets is not better by itself: a form that never learns the new ports opens
    no new sockets, and leaves only the first generation's behind."""
    net, prefill, manager = _world(variant)
    rounds = [[_request(variant, manager, 100).name]]
    for restart in range(restarts):
        prefill.restart()
        rounds.append([_request(variant, manager, 101 + 2 * restart + i).name for i in range(2)])
    live = {f"tcp://{prefill.rank_ip}:{port}" for port in prefill.rank_ports}
    dead = sorted(net.open_sockets - live)
    reached = any(outcome == "Success" for batch in rounds[1:] for outcome in batch)
    why = "one per earlier generation it reached" if reached else "it never reached a restarted prefill"
    return (
        f"{_name(variant):>6}: {restarts} prefill restarts; requests before | after each restart: "
        f"{' | '.join(' '.join(batch) for batch in rounds)}\n"
        f"        PUSH sockets to dead ports still cached: {len(dead)} ({why}): {', '.join(dead)}"
    )


def slow_prefill(variant: ModuleType) -> str:
    details = slow_check.observe(variant).details
    return (
        f"{_name(variant):>6}: slow request {details['slow_request']}; next {details['successes_after']} "
        f"succeeded; extra /route fetches {details['extra_route_fetches']}, re-registrations "
        f"{details['re_registrations']}; late answers dropped {details['late_answers_dropped']}"
    )


def all_forms(experiment: Any, forms: tuple[Any, ...] = (reference.buggy, reference.fixed)) -> str:
    return "\n".join(str(experiment(form)) for form in forms)


EXERCISE_CHOICES = ("a", "b", "c")
EXERCISE = """\
FIXED form. Receivers r1 and r2 both use the cached generation G1 (old ports). The prefill
restarts. r1's send fails: it drops G1. r3 arrives, fetches /route, caches G2 (new ports).
Now r2's send fails on G1 and r2 invalidates too. Then request r4 arrives. What happens?
  (a) r4 fetches /route again: r2's invalidation deleted G2
  (b) r4 uses G2 without fetching, and succeeds
  (c) r4 fails: it is handed the stale G1"""


def check_exercise(answer: object) -> Feedback:
    race = replacement_race(reference.fixed)
    truth = "c" if race.fourth != "Success" else ("b" if race.fourth_fetches == 0 else "a")
    return check_choice(
        answer,
        truth,
        EXERCISE_CHOICES,
        why="r2 recorded the very list object G1 it used; invalidation deletes the key only while "
        "the pool still holds *that object* (`is`). The pool holds G2, so nothing is deleted and "
        "r4 reuses G2. The by-key variant below is the tempting wrong fix: it costs a re-fetch, "
        "and under load, one per stale receiver.",
        hint="what exactly does `invalidate_cached_bootstrap_infos` compare before deleting?",
        evidence=all_forms(replacement_race, (reference.buggy, reference.fixed, BY_KEY)),
    )


def ports_of(event: Event) -> str:
    """The ports a scenario request used, from its timeline detail ("room R via ports A,B")."""
    return event.detail.rsplit(" ", 1)[-1] if " via ports " in event.detail else ""


class Bench:
    """A decode `KVManager` (its KV memory listening) and one prefill rank behind `ADDR`, on
    the mock network: the notebook builds receivers on it and calls them itself. Prints
    what the decode has cached, where the prefill listens now, and how often `/route` was
    asked."""

    def __init__(self, variant: ModuleType) -> None:
        self.net, self.prefill, self.manager = _world(variant)

    def cached_ports(self) -> dict[str, list[int]]:
        with self.manager.connection_lock:
            pool = dict(self.manager.connection_pool)
        return {key: [int(info["rank_port"]) for info in infos] for key, infos in pool.items()}

    def look(self, receiver: Any) -> str:
        """One receiver's state and the cache's, after the calls the cell made."""
        used = [int(info["rank_port"]) for info in receiver.bootstrap_infos or []]
        why = self.manager.failure_records.get(receiver.bootstrap_room)
        return (
            f"room {receiver.bootstrap_room}: poll() = {KVPoll(receiver.poll()).name}, via port(s) {used}"
            + (f" ({why})" if why else "")
            + f"\n  {self}"
        )

    def __repr__(self) -> str:
        return (
            f"connection_pool {self.cached_ports()}; the prefill listens on {self.prefill.rank_ports}; "
            f"GET /route so far: {self.net.route_fetches}"
        )


def interleaving_source() -> Source:
    """How the checks put a second receiver "beside" the first: a step scripted at the
    first receiver's `GET /route`, run on its thread at that instant, as another thread
    could (or deferred, when the first holds `connection_lock`, as another would block)."""
    return source(
        checks_sharing._fill_concurrently,
        check_world.CheckWorld.beside,
        scripted.ScriptedNetwork.get_route,
    )


def restart_timeline(
    variant: ModuleType, before: int = 1, after: int = 2
) -> tuple[Result, list[Span], list[float]]:
    """The lesson's request stream in virtual seconds: `before` requests, a prefill restart,
    `after` more. Returns a timeline `Result` (verdict `bug` when no request after the
    restart succeeded, else `ok`), each request's span (grey when it failed), and the
    instants the heartbeat probed `/health` (every `heartbeat_interval`; checked against
    the rounds the heartbeat counted, and that none missed)."""
    timeline: list[Event] = []
    spans: list[Span] = []
    outcomes = []
    with open_world(variant, "mock") as world:
        world.start()
        start, rounds = world.clock.now(), world.manager.heartbeat_rounds
        for room in range(1, before + after + 1):
            if room == before + 1:
                old = list(world.prefill.rank_ports)
                world.prefill.restart()
                restart_at = world.clock.now() - start
                timeline.append(
                    Event(restart_at, "prefill restart", f"ports {old} -> {world.prefill.rank_ports}")
                )
            world.tick()
            begun = world.clock.now() - start
            outcome = world.request(room)
            ended = world.clock.now() - start
            outcomes.append(outcome)
            ok = outcome.status == KVPoll.Success
            ports = ",".join(map(str, outcome.ports))
            timeline.append(Event(ended, KVPoll(outcome.status).name, f"room {room} via {ports}"))
            if ended > begun:
                spans.append((begun, ended, "waiting for KV" if not ok else "", ok))
        end, counted = world.clock.now() - start, world.manager.heartbeat_rounds - rounds
        misses = max(world.manager.heartbeat_failures.values(), default=0)
    interval = CONFIG.heartbeat_interval
    probes = [interval * k for k in range(1, int(end / interval + 1e-9) + 1)]
    if len(probes) != counted or misses:
        raise RuntimeError(
            f"expected {len(probes)} answered probes, the heartbeat counted {counted} ({misses} missed)"
        )
    recovered = any(o.status == KVPoll.Success for o in outcomes[before:])
    verdict: Verdict = "ok" if recovered else "bug"
    result = Result("stale-bootstrap", _name(variant), "mock", verdict, verdict, "", timeline=timeline)
    return result, spans, probes
