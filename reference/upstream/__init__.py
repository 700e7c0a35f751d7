"""The upstream adapter: upstream sglang's own classes as a variant (`--sglang PATH`).

`load_sglang(PATH)` reads upstream's disaggregation package from an sglang wheel,
source checkout or installation (`source.py`), finds each class by name and executes
the file that defines it with stand-ins only for what cannot run here (`loader.py`,
`standins.py`; sglang's dependencies are never installed), gives every loaded file
per-thread stand-ins for its `time`, `requests`, `asyncio` and `logger` globals
(`bound.py`), and wraps each upstream component in the class the scenarios drive,
one adapter per component. Each adapter's docstring lists exactly which parts are
upstream code and which are adapter code; the methods each fix changed are always
upstream's (`tests/test_upstream_traced.py` traces them). Nothing from upstream is
copied into this repository.

| component | upstream class (found by name) | adapter |
|---|---|---|
| `KVManager` | `MooncakeKVManager` (its `CommonKVManager.__init__`), mori's cleanup | `manager.py` |
| `KVReceiver` | `MooncakeKVReceiver` | `receiver.py` |
| `BootstrapServer` | `CommonKVBootstrapServer` | `bootstrap_server.py` |
| `DPDispatcher` | `DPDispatcher` | `dispatcher.py` |

A component a version lacks is listed in the variant module's `UNAVAILABLE` as "not
present in <version>: <name>", which a lesson needing it reports as `unknown` (lesson
`task-refs` reports that probe as not driven and decides from the other, see
`Lesson.probes`). `DECIDE` (`wiring.py`) lets upstream's own wiring decide: `latent`
where a defect is there but nothing in that release triggers it; it runs each check
under the line tracer (`coverage.py`: what decided it, `adapter-decided` where adapter
code did), and a send that would never return upstream is that run's `bug`
(`zmq_wire.hang_is_bug`).

Expectations come from upstream's release history: a fix lesson is expected `bug` (or
`latent`, `BEFORE_FIX`) on versions before its fix and `ok` from the version that has
it; a residual lesson (a hole the fixes leave open) as `RESIDUAL` says per release,
with the upstream line behind each row (`unknown` where the component is not there).
A source checkout without a version file is assumed to be recent (every fix in).
"""

from __future__ import annotations

import contextlib
import functools
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path

from reference.upstream import bound, configs, coverage, deps, prefill, wiring, zmq_wire
from reference.upstream.bootstrap_server import server_class
from reference.upstream.dispatcher import dispatcher_class
from reference.upstream.errors import NoStandIn, UpstreamError
from reference.upstream.loader import UpstreamLoad
from reference.upstream.manager import manager_class
from reference.upstream.receiver import receiver_class
from reference.upstream.source import UpstreamSource, open_source
from reference.variants import Expected, Variant

# lesson -> first sglang release with its upstream fix (the PR links are in each lesson's README).
FIRST_FIXED = {
    "failed-resurrect": "0.5.12",  # https://github.com/sgl-project/sglang/pull/24539
    "stale-bootstrap": "0.5.19",  # https://github.com/sgl-project/sglang/pull/36029
    "live-set-race": "0.5.19",  # https://github.com/sgl-project/sglang/pull/36351
    "task-refs": "0.5.19",  # https://github.com/sgl-project/sglang/pull/33048
}
# Before its fix, what upstream's own wiring does with the defect (wiring.py): `latent`
# where nothing in that release triggers it; `--provoke` adds the trigger: `bug`.
BEFORE_FIX: dict[str, Expected] = {
    "failed-resurrect": "bug",
    "stale-bootstrap": "bug",
    "live-set-race": "latent",
    "task-refs": "latent",
}

# The holes the fixes leave open (reference/hardened closes them), per release, read from
# each release's code and verified by running (VERSIONS.md): lesson -> rows of (first
# release, expected from it, why); a row holds until the lesson's next. Lines are
# 0.5.23's unless a row names its release. `unknown`: the component is not there.
RESIDUAL: dict[str, tuple[tuple[str, Expected, str], ...]] = {
    "restart-recovery": (
        ("0.5.11", "bug", "the decode's PUSH sockets have no disconnect monitor (CommonKVReceiver._connect, "
         "common/conn.py:2739; only the prefill's CommonKVManager._connect watches, from 0.5.14): a stale "
         "send queues and the request ends on the waiting timeout (0.5.19+: 1 of 5 fail, before: 5 of 5)"),
        ("0.5.15", "bug", "worse: CommonKVReceiver._connect sets RECONNECT_IVL -1 and no SNDTIMEO "
         "(common/conn.py:1107 in 0.5.15): once the restarted rank's connection drops libzmq drops the "
         "pipe for good, and the next send to it (send_metadata, mooncake/conn.py:1909) never returns: the "
         "scheduler hangs (the adapter's 1 s bound ends the wait, reference/upstream/zmq_wire.py)"),
        ("0.5.16", "bug", "as from 0.5.11: CommonKVReceiver._connect no longer sets RECONNECT_IVL -1 "
         "(common/conn.py:1318 in 0.5.16), the stale send queues"),
    ),
    "room-reuse": (
        ("0.5.11", "bug", "the status table and failure records are keyed by the room id alone: A's late "
         "abort leaves its record on B (and fails B, from 0.5.12), A's late Success statuses lift B to "
         "Success (max, CommonKVManager.update_status)"),
        ("0.5.20", "bug", "partly closed: Failed is terminal (common/conn.py:409 in 0.5.20); A's late "
         "abort still fails B"),
        ("0.5.23", "bug", "partly closed: a receiver that concluded Failed records nothing on a late "
         "abort (CommonKVReceiver.abort, common/conn.py:2959); A's late statuses still reach B "
         "(common/conn.py:680)"),
    ),
    "failure-records": (
        ("0.5.11", "bug", "a late abort records its reason unconditionally (CommonKVReceiver.abort)"),
        ("0.5.23", "bug", "partly closed: a receiver that concluded Failed records nothing on a late "
         "abort (CommonKVReceiver.abort, common/conn.py:2959); one that concluded Success still "
         "records one, kept for ever (found by the simulation)"),
    ),
    "supervised-loops": (
        ("0.5.11", "unknown", "not present: DPDispatcher (first in 0.5.13)"),
        ("0.5.13", "bug", "DPDispatcher._worker_watchdog's loop is in no try (encoder/runtime.py:933): an "
         "exception ends it, nothing logs or restarts it"),
    ),
    "stale-tracker": (
        ("0.5.11", "latent", "mori's _cleanup_room_tracking (mori/conn.py:574 in 0.5.18) pops the "
         "address's set without the lock, but MoriKVManager.__init__ (mori/conn.py:305 in 0.5.18) never "
         "starts the heartbeat whose failure handler pops a failed prefill's set: the race needs both"),
        ("0.5.19", "bug", "mori starts the heartbeat (mori/conn.py:337 in 0.5.19) beside its cleanup "
         "(mori/conn.py:770 in 0.5.19)"),
        ("0.5.20", "ok", "mori's cleanup is gone; CommonKVReceiver.clear discards the room from the "
         "address's current set and never pops it (common/conn.py:1853 in 0.5.20)"),
    ),
    # Found on the netns transport (reference/netns/). Decided on the decode side: the
    # scheduler that frees pages and the prefill that writes them are the scenario's.
    "late-kv-write": (
        ("0.5.11", "bug", "the waiting timeout fails a request whose prefill still holds its metadata "
         "(CommonKVReceiver._check_waiting_timeout, common/conn.py:2903) and the scheduler frees its pages "
         "at once (DecodeTransferQueue.pop_transferred, decode.py:1310 in 0.5.11): the prefill's late "
         "transfer writes pages that were handed out again"),
        ("0.5.19", "bug", "as before by default; an opt-in deferred release "
         "(SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE, environ.py:672 in 0.5.19, off) holds the pages "
         "until every prefill rank acks the abort, 30 s at most"),
        ("0.5.21", "bug", "the deferred release is on by default (environ.py:722 in 0.5.21), but after 30 s "
         "without the acks it frees the pages anyway (DecodeTransferQueue.resolve_deferred_releases, "
         "decode.py:3096, 'releasing anyway'): a prefill paused longer still writes them; the scenario's B "
         "comes 60 s after A failed (not driven here: upstream's scheduler and prefill)"),
    ),
    "bootstrap-partition": (
        ("0.5.11", "bug", "the heartbeat's only evidence is GET /health on the bootstrap server: after "
         "max_failures misses it calls _handle_node_failure (common/conn.py:2043; mooncake's "
         "heartbeat_checker before 0.5.13), which fails every room of that prefill while its ranks "
         "still deliver statuses"),
    ),
}  # fmt: skip

# A builder makes one component's adapter class from the loaded version and says which
# members that version cannot drive ({"KVManager._handle_node_failure": reason}); it
# raises UpstreamError with the reason when the version cannot provide it at all.
Built = tuple[type, dict[str, str]]
Builder = Callable[[UpstreamLoad, wiring.Triggers], Built]


def _build_manager(load: UpstreamLoad, triggers: wiring.Triggers) -> Built:
    return manager_class(load, triggers)


def _build_receiver(load: UpstreamLoad, _triggers: wiring.Triggers) -> Built:
    return receiver_class(load), {}


def _build_dispatcher(load: UpstreamLoad, triggers: wiring.Triggers) -> Built:
    upstream, module = load.get("DPDispatcher"), load.module(load.where("DPDispatcher")[0])
    return dispatcher_class(upstream, module, load.source.label, triggers), {}


def _build_server(load: UpstreamLoad, triggers: wiring.Triggers) -> Built:
    return server_class(load.get("CommonKVBootstrapServer"), load.source.label, triggers), {}


BUILDERS: dict[str, Builder] = {
    "KVManager": _build_manager,
    "KVReceiver": _build_receiver,
    "BootstrapServer": _build_server,
    "DPDispatcher": _build_dispatcher,
}

_CACHE: dict[tuple[str, float, int], types.ModuleType] = {}


def load_sglang(path: str, provoke: bool = False) -> Variant:
    """The variant for the sglang at PATH; raises `UpstreamError` with one line.
    `provoke`: the expectations of a run with `Options(provoke=True)`."""
    source = open_source(path)
    deps.require(f"--sglang {source.label}")
    module = _variant_module(source, Path(path))
    return Variant(source.label, module, "ok", expectations(source.version, provoke))


def _variant_module(source: UpstreamSource, path: Path) -> types.ModuleType:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime, stat.st_size)
    if key not in _CACHE:
        with _locks_frontrun_sees():
            _CACHE[key] = _build(source)
    return _CACHE[key]


@contextlib.contextmanager
def _locks_frontrun_sees() -> Iterator[None]:
    """Under frontrun (`--explore`), upstream's class-level locks (`_global_lock` of its
    receivers' ZMQ connect cache) are made while its modules run, before any exploration:
    made then as plain locks, frontrun's scheduler could not see them, and a thread it
    paused while holding one would block the other for good. Made as frontrun's own
    locks, they are what the explorations' locks are; outside a scheduler they are plain."""
    from reference.explore.runner import frontrun_active

    if not frontrun_active():
        yield
        return
    from frontrun._cooperative import patch_locks, unpatch_locks

    patch_locks()
    try:
        yield
    finally:
        unpatch_locks()


def _build(source: UpstreamSource) -> types.ModuleType:
    load = UpstreamLoad(source)
    triggers = wiring.Triggers()
    module = types.ModuleType(f"reference.upstream[{source.label}]")
    unavailable: dict[str, str] = {}
    for component, builder in BUILDERS.items():
        try:
            cls, gaps = builder(load, triggers)
        except deps.MissingDependency:
            raise  # the whole load stops with its one line, never an `unknown` per lesson
        except (UpstreamError, NoStandIn) as exc:
            unavailable[component] = (
                str(exc) if str(exc).startswith(("not present", source.label)) else (f"{source.label}: {exc}")
            )
            continue
        except Exception as exc:  # an upstream change the adapter does not know yet
            unavailable[component] = f"{source.label}: no {component} adapter: {type(exc).__name__}: {exc}"
            continue
        setattr(module, component, cls)
        unavailable.pop(component, None)
        unavailable.update({member: f"{source.label}: {why}" for member, why in gaps.items()})
    for loaded in load.upstream.values():
        bound.install(loaded)
    decide = zmq_wire.hang_is_bug(functools.partial(wiring.decide, load, triggers))
    module.DECIDE = functools.partial(coverage.traced_decide, module, decide)  # type: ignore[attr-defined]
    # The simulation (reference/sim) drives upstream's classes as it drives ours. Its whole-state
    # bound leaves out upstream's class-level ZMQ connect cache (our variants keep theirs in the
    # transport, which it never walks) and the adapter's own wiring; and it plans only the run's
    # own socket options: a fail-fast socket blocks each send to a gone rank for the real send
    # timeout (libzmq), which runs on a virtual clock cannot afford. Its runs, on real pyzmq
    # sockets under the coverage tracer (`coverage.traced_decide`), are about 4x slower than on
    # our variants: it plans fewer per second of budget, and 30 runs at the least.
    module.SIM_OPAQUE = ("_socket_cache", "_socket_locks", "relays", "_inline_globals")  # type: ignore[attr-defined]
    module.SIM_OWN_SOCKETS_ONLY = True  # type: ignore[attr-defined]
    module.SIM_RUNS_PER_SECOND = 3  # type: ignore[attr-defined]
    module.SIM_MIN_RUNS = 30  # type: ignore[attr-defined]  # 10 s a lesson at that rate
    module.UNAVAILABLE = unavailable  # type: ignore[attr-defined]
    module.CONFIGURATIONS = _configured(module, load, triggers)  # type: ignore[attr-defined]
    module.TRIGGERS = triggers  # type: ignore[attr-defined]
    module.SOURCE = source  # type: ignore[attr-defined]
    module.LOAD = load  # type: ignore[attr-defined]
    return module


def _configured(
    module: types.ModuleType, load: UpstreamLoad, triggers: wiring.Triggers
) -> dict[str, types.ModuleType]:
    """Per named configuration this release offers (`configs.py`), a variant module whose
    `KVManager` runs in it; its other components are the default module's. A check with
    a `configuration` runs on that module (`harness/lesson.py`)."""
    if not hasattr(module, "KVManager") or not hasattr(module, "KVReceiver"):
        return {}
    found = {}
    for name, configuration in configs.offered(load).items():
        configured = types.ModuleType(f"{module.__name__}[{name}]")
        configured.__dict__.update(
            {k: v for k, v in vars(module).items() if not k.startswith("__") and k != "CONFIGURATIONS"}
        )
        configured.KVManager = manager_class(load, triggers, configuration)[0]  # type: ignore[attr-defined]
        if configuration.prefill_side:  # upstream's prefill-side manager in it (prefill.py)
            configured.PrefillKVManager = prefill.prefill_manager_class(load, configuration)  # type: ignore[attr-defined]
            configured.DecodeEndpoint = prefill.DecodeEndpoint  # type: ignore[attr-defined]
        configured.CONFIGURATION = configuration  # type: ignore[attr-defined]
        found[name] = configured
    return found


def expectations(version: str | None, provoke: bool = False) -> dict[str, Expected]:
    """lesson -> expected verdict for an upstream version (None: a recent checkout)."""
    have = _release(version) if version is not None else (1 << 30,)
    fixes: dict[str, Expected] = {
        lesson: "ok" if have >= _release(first) else "bug" if provoke else BEFORE_FIX[lesson]
        for lesson, first in FIRST_FIXED.items()
    }
    residual = {lesson: residual_row(lesson, have)[1] for lesson in RESIDUAL}
    if provoke:
        residual = {lesson: "bug" if e == "latent" else e for lesson, e in residual.items()}
    return {**fixes, **residual}


def residual_row(lesson: str, have: tuple[int, ...]) -> tuple[str, Expected, str]:
    """The row of `RESIDUAL[lesson]` that holds for release `have` (the first before it)."""
    rows = RESIDUAL[lesson]
    return next((row for row in reversed(rows) if have >= _release(row[0])), rows[0])


def _release(version: str) -> tuple[int, ...]:
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else (0,)


__all__ = ["BEFORE_FIX", "FIRST_FIXED", "RESIDUAL", "UpstreamError", "expectations", "load_sglang"]
