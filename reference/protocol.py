"""The variant protocol: what a module must provide for the scenarios to drive it.

A variant is any module exposing component classes under these names. `reference.buggy`,
`reference.fixed`, a user's `--impl` module and the upstream adapter (`--sglang`) are
all variants. A lesson lists the components it needs (`Lesson.needs`); before it runs,
`missing_members` checks that each needed class exists and has every method and
property named here, so a gap becomes an `unknown` verdict naming what is missing
instead of an exception halfway through a scenario. README.md, "The variant
protocol", says the same in prose.

Instance attributes (`request_status`, ...) cannot be checked on a class; a variant
that lacks one gets `unknown` with the AttributeError the scenario hit.
"""

from __future__ import annotations

import asyncio
import inspect
from types import ModuleType
from typing import Any, Protocol

from reference.clock import Clock
from reference.config import ManagerConfig
from reference.hooks import Hooks
from reference.messages import PrefillServerInfo
from reference.status import KVPoll
from reference.transport.base import Transport


class KVManagerProtocol(Protocol):
    """The decode-side manager (upstream `CommonKVManager` in DECODE mode).

    Hook points it must fire (`hooks.fire(name, *args)`), with no lock held (a scenario
    parks the firing thread there while others run), so scenarios can order races:
    - `node_failure.after_room(addr, room)`: inside `_handle_node_failure`'s loop,
      after each affected room was handled;
    - `cleanup_room_tracking.after_get(room)`: in `_cleanup_room_tracking`, right
      after it fetched the tracker's set and before it discards from it.
    """

    request_status: dict[int, int]  # room -> KVPoll value; a cleared room is absent
    failure_records: dict[int, str]  # room -> reason
    addr_to_rooms_tracker: dict[str, set[int]]  # bootstrap addr -> rooms waiting on it

    def __init__(
        self,
        transport: Transport,
        config: ManagerConfig | None = None,
        clock: Clock | None = None,
        hooks: Hooks | None = None,
    ) -> None: ...

    def update_status(self, bootstrap_room: int, status: KVPoll) -> None: ...

    def check_status(self, bootstrap_room: int) -> KVPoll:
        """Raises KeyError for a cleared room."""
        ...

    def clear(self, bootstrap_room: int) -> None:
        """What a receiver's `clear()` does to the manager: forget the room."""
        ...

    def record_failure(self, bootstrap_room: int, reason: str) -> None: ...

    def add_prefill(self, bootstrap_addr: str, info: PrefillServerInfo | None = None) -> None:
        """What a successful `try_ensure_parallel_info(addr)` leaves behind."""
        ...

    def track_room(self, bootstrap_addr: str, bootstrap_room: int) -> None:
        """What a receiver's constructor does: track the room, mark it Bootstrapping."""
        ...

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        """Mori-style cleanup: discard the room from the live tracker set, unlocked."""
        ...

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None: ...

    def start_heartbeat(self) -> None:
        """Start probing `/health` every `config.heartbeat_interval` on `clock`."""
        ...

    @property
    def heartbeat_alive(self) -> bool: ...

    def close(self, timeout: float = 2.0) -> None:
        """Stop the heartbeat (bounded) and release what the manager holds."""
        ...


class KVReceiverProtocol(Protocol):
    """One request's decode-side receiver (upstream `CommonKVReceiver` plus mooncake's
    send path), used by `stale-bootstrap`. That lesson also calls two more manager
    methods, `try_ensure_parallel_info(addr) -> bool` and `listen(memory)` (bind the
    decode inbox, register KV memory), and reads `heartbeat_rounds`/`heartbeat_failures`.
    """

    bootstrap_infos: list[dict] | None  # the prefill ranks this request used

    def __init__(self, mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> None: ...

    def init(self, prefill_dp_rank: int = 0) -> None:
        """Find the prefill ranks (cache or `GET /route`), register KV memory: WaitingForInput."""
        ...

    def send_metadata(self, kv_indices: list[int]) -> None: ...

    def poll(self) -> KVPoll:
        """Latch Success/Failed; fire the waiting timeout on the manager's clock."""
        ...

    def clear(self) -> None: ...


class BootstrapServerProtocol(Protocol):
    """The prefill's bootstrap server (upstream `CommonKVBootstrapServer`), used by `task-refs`.

    Constructed as `BootstrapServer(host, port, *, cleanup_interval, entry_ttl, now,
    cleanup_ticks, loop, listen)`; `table` is its route table (`handle(method, path,
    query, body)`, `room_to_dp_rank`); `cleanup_rounds` counts cleanup passes.
    """

    table: Any
    cleanup_rounds: int

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None: ...

    def start(self) -> BootstrapServerProtocol:
        """Run the server's loop on its own thread; return once it serves."""
        ...

    @property
    def address(self) -> str: ...

    def close(self, timeout: float = 2.0) -> None: ...


class DPDispatcherProtocol(Protocol):
    """The multimodal encoder's DP dispatcher (upstream `DPDispatcher`), used by `task-refs`.

    Constructed as `DPDispatcher(workers, config)` with a `WorkerPool` and a
    `DispatcherConfig`; `start()` launches the three background loops on the running loop.
    """

    req_id_to_rank: dict[str, int]

    def __init__(self, workers: Any, config: Any = None) -> None: ...

    def start(self) -> None: ...

    async def dispatch(self, payload: str, req_id: str | None = None) -> Any: ...

    @property
    def dead_ranks(self) -> frozenset[int]: ...

    def all_ranks_alive(self) -> bool: ...

    def mappings_to(self, rank: int) -> int: ...

    def loop_tasks(self) -> dict[str, asyncio.Task]:
        """The background loops still alive, by coroutine name."""
        ...

    async def close(self) -> None: ...


# Component name -> its protocol.
PROTOCOLS: dict[str, type] = {
    "KVManager": KVManagerProtocol,
    "KVReceiver": KVReceiverProtocol,
    "BootstrapServer": BootstrapServerProtocol,
    "DPDispatcher": DPDispatcherProtocol,
}


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The methods and properties a class must define to follow `protocol`."""
    return tuple(
        name
        for name, value in vars(protocol).items()
        if not name.startswith("__") and (inspect.isfunction(value) or isinstance(value, property))
    )


def missing_members(module: ModuleType, components: tuple[str, ...]) -> list[str]:
    """What `module` lacks of `components`: `Name` for a class, `Name.method` for a member.

    An entry may itself name a member (`KVManager._handle_node_failure`): a lesson lists
    one that way when it drives that member specifically, so a variant can declare it
    unavailable (see `Variant.unavailable`) without losing the class's other lessons.
    """
    missing: list[str] = []
    for component in components:
        owner, _, member = component.partition(".")
        if member:
            if not hasattr(getattr(module, owner, None), member):
                missing.append(component)
            continue
        cls = getattr(module, component, None)
        if cls is None:
            missing.append(component)
            continue
        protocol = PROTOCOLS.get(component)
        members = protocol_members(protocol) if protocol is not None else ()
        missing += [f"{component}.{name}" for name in members if not hasattr(cls, name)]
    return list(dict.fromkeys(missing))  # a member named twice is reported once
