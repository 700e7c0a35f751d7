"""Recovery after a prefill restart, on the loopback transport (lesson `stale-bootstrap`).

Per repetition and variant: a prefill with two TP ranks in its own OS process and
`receivers` decode ranks (`LoopbackDecode` each: its own manager, `connection_pool`,
sockets and heartbeat, upstream's 5 s x 2), each opening a request every 1/rate s.
After `before` seconds the prefill is killed and a new process starts behind the same
bootstrap port (new rank ports); the streams go on for `horizon` seconds. Every
request's outcome and latency is kept (`benchmarks/recovery_metrics.py` says what is
derived). The new prefill counts as registered when `GET /route` with every rank -1
answers 200 (polled every millisecond from the moment the old process is dead).

Decision: a receiver is a decode rank with one request at a time, as upstream's
scheduler thread issues them, so "per cache key" is per decode rank. Several threads
sharing one cache are the contention benchmark's business.

The fixed form learns of the restart only from a failed request. With upstream's
socket options (IMMEDIATE=0, SNDTIMEO 1 s) a send to a dead port is queued silently
and the request fails on its waiting timeout (cut to 1 s here, reported in the
config); with fail-fast sockets (IMMEDIATE=1, SNDTIMEO 0.1 s) the send itself fails.
Each sweep is one set of socket options, named in every row.

Transports (`transports`): loopback (every process on 127.0.0.1) and, with
`--netns` as root, netns: the prefill and each decode rank on its own network
namespace (`reference/netns/`), the same socket options; each sweep names its transport.

Variants alternate within each repetition (buggy, fixed, hardened, buggy, ...) so both see the
same machine load over time. The heartbeat cannot rescue the buggy form here: the
restart takes well under interval x misses (10 s), which is exactly upstream's trigger.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from types import ModuleType
from typing import Any

import requests

from benchmarks.loopback_decode import WAITING_TIMEOUT, LoopbackDecode
from benchmarks.modes import Mode
from benchmarks.recovery_metrics import summarise_run, summarise_variant
from benchmarks.stream import Outcome, StreamConfig, run_stream
from reference.prefill.loopback import LoopbackPrefill
from reference.transport.sockets import SocketOptions

VARIANTS = ("buggy", "fixed", "hardened")
TP_SIZE = 2
ROOMS_PER_DECODE = 1_000_000  # disjoint room ranges: the prefill keys aborts by room
ALL_RANKS = "prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1"
REGISTER_WITHIN = 30.0  # real seconds a restarted prefill may take to register
POLL_S = 0.001


TRANSPORTS = ("loopback", "netns")
DECODE_HOSTS = 8  # netns: decode rank i on 198.18.0.(2 + i)


class Fleet:
    """`receivers` decode ranks facing one restartable prefill (a `stream.System`); `network`
    (netns) makes each rank's transport on its own host and watches the route from the first."""

    def __init__(self, module: ModuleType, prefill: Any, receivers: int, sockets: SocketOptions,
                 network: Any = None) -> None:  # fmt: skip
        self.prefill, self.network = prefill, network
        self._stack = ExitStack()
        self.decodes = [self._stack.enter_context(self._decode(module, i, sockets)) for i in range(receivers)]
        for decode in self.decodes:
            decode.manager.start_heartbeat()

    def _decode(self, module: ModuleType, index: int, sockets: SocketOptions) -> LoopbackDecode:
        transport = self.network.decode(index, sockets) if self.network else None
        first_room = 1 + index * ROOMS_PER_DECODE
        return LoopbackDecode(
            module, self.prefill, first_room=first_room, sockets=sockets, transport=transport
        )

    def request(self, slot: int) -> Outcome:
        outcome = self.decodes[slot].request()
        return Outcome(outcome.ok, f"decode{slot}:{outcome.key}", outcome.ports, outcome.detail)

    def restart(self) -> Callable[[], float | None]:
        """Kill the prefill, start a new one; the probe says when it had registered."""
        registered: list[float] = []
        self.prefill.kill()
        watcher = threading.Thread(target=self._watch, args=(registered,), name="watch-route")
        starter = threading.Thread(target=self.prefill.start, name="prefill-start")
        watcher.start()
        starter.start()

        def probe() -> float | None:
            starter.join(REGISTER_WITHIN)
            watcher.join(REGISTER_WITHIN)
            return registered[0] if registered else None

        return probe

    def _watch(self, registered: list[float]) -> None:
        if self.network is None:
            self._poll_route(registered)
            return
        with self.network.entered():  # this thread's sockets on the first decode host
            self._poll_route(registered)

    def _poll_route(self, registered: list[float]) -> None:
        url = f"http://{self.prefill.bootstrap_addr}/route?{ALL_RANKS}"
        deadline = time.monotonic() + REGISTER_WITHIN
        with requests.Session() as http:
            while time.monotonic() < deadline:
                try:
                    if http.get(url, timeout=0.5).status_code == 200:
                        registered.append(time.perf_counter())
                        return
                except requests.RequestException:
                    pass
                time.sleep(POLL_S)  # polling another process, bounded by the deadline

    def heartbeat_misses(self) -> int:
        return max((max(d.manager.heartbeat_failures.values(), default=0) for d in self.decodes), default=0)

    def close(self) -> None:
        self._stack.close()


class NetnsNetwork:
    """The netns rows' hosts: a prefill and up to DECODE_HOSTS decode ranks, one namespace each."""

    def __init__(self, stack: ExitStack) -> None:
        from reference.netns.topology import PREFILL_IP_BASE, Topology

        self.topology = Topology()
        stack.callback(self.topology.close)
        self.prefill_host = self.topology.add_host("prefill-0", f"198.18.0.{PREFILL_IP_BASE}")
        self.hosts: list[Any] = []

    def decode(self, index: int, sockets: SocketOptions) -> Any:
        from reference.netns.transport import NetnsTransport

        if index >= DECODE_HOSTS:
            raise ValueError(f"the netns rows have at most {DECODE_HOSTS} decode ranks")
        host = self.topology.add_host(f"decode-{index}", f"198.18.0.{2 + index}")
        self.hosts.append(host)
        return NetnsTransport(host.ns, host.ip, sockets.send_timeout, sockets.immediate)

    def entered(self) -> Any:
        from reference.netns import ns

        return ns.entered(self.hosts[0].ns)


def _prefill(stack: ExitStack, transport: str) -> tuple[Any, NetnsNetwork | None]:
    if transport == "loopback":
        return stack.enter_context(LoopbackPrefill(tp_size=TP_SIZE)), None
    from reference.netns.prefill import NetnsPrefill

    network = NetnsNetwork(stack)
    return stack.enter_context(NetnsPrefill(network.prefill_host, tp_size=TP_SIZE)), network


def one_run(variant: str, config: StreamConfig, sockets: SocketOptions, repetition: int,
            transport: str = "loopback") -> dict[str, Any]:  # fmt: skip
    module = importlib.import_module(f"reference.{variant}")
    with ExitStack() as stack:
        prefill, network = _prefill(stack, transport)
        old_ports = list(prefill.rank_ports)
        fleet = Fleet(module, prefill, config.receivers, sockets, network)
        try:
            requests_, registered = run_stream(fleet, config)
            misses = fleet.heartbeat_misses()
        finally:
            fleet.close()
        run = summarise_run(repetition, requests_, registered, old_ports)
        run.update(old_ports=old_ports, new_ports=list(prefill.rank_ports), heartbeat_misses=misses)
    return run


def run(mode: Mode, receivers: int | None = None, rate: float | None = None,
        transports: tuple[str, ...] = ("loopback",)) -> dict[str, Any]:  # fmt: skip
    config = StreamConfig(
        receivers=receivers or mode.recovery_receivers,
        rate=rate or mode.recovery_rate,
        before=mode.recovery_before,
        horizon=mode.recovery_horizon,
    )
    sweeps = []
    for transport in transports:
        for sockets in mode.recovery_sockets:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
            for repetition in range(mode.recovery_repeats):
                for name in VARIANTS:
                    runs[name].append(one_run(name, config, sockets, repetition, transport))
            variants = {name: {"summary": summarise_variant(r), "runs": r} for name, r in runs.items()}
            sweeps.append({"transport": transport, "sockets": sockets.label, "sockets_name": sockets.name,
                           "immediate": sockets.immediate, "send_timeout_s": sockets.send_timeout,
                           "variants": variants})  # fmt: skip
    return {
        "config": {
            "receivers": config.receivers,
            "rate_per_receiver": config.rate,
            "before_s": config.before,
            "horizon_s": config.horizon,
            "repetitions": mode.recovery_repeats,
            "transports": list(transports),
            "prefill_tp_size": TP_SIZE,
            "waiting_timeout_s": WAITING_TIMEOUT,
            "waiting_timeout": f"{WAITING_TIMEOUT:g} s, shortened from upstream's 300 s for the run",
            "heartbeat": "5 s x 2 misses (upstream defaults)",
        },
        "sweeps": sweeps,
    }
