"""The one place a transport name becomes objects.

A scenario asks for a transport by name (`mock`, `loopback`, `netns`: `TRANSPORTS`) and gets
a `Kit`: the things that differ between the transports, built the same way everywhere.

- `mock`: everything in this process on a `MockNetwork`, the clock injectable, faults by
  name, no sockets.
- `loopback`: real pyzmq and HTTP on 127.0.0.1, each prefill in its own OS process.
- `netns`: loopback's processes and sockets, each host in its own network namespace.

The transports themselves (`mock.py`, `loopback.py`, `dp_mock.py`, `dp_zmq.py`) never
import this module, so there is no import circle; heavy modules (zmq, the prefill
process) are imported only when their kit is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from reference.clock import Clock
from reference.transport import IN_PROCESS, TRANSPORTS, check_transport
from reference.transport.dp_base import WorkerPool
from reference.transport.sockets import UPSTREAM, SocketOptions

MOCK_PREFILL_ADDR = "10.0.0.1:8998"


class Kit:
    """What differs between transports; one subclass per name in `TRANSPORTS`."""

    name = ""

    @property
    def in_process(self) -> bool:
        """Every rank lives in this process (no bytes cross processes)."""
        return self.name in IN_PROCESS

    def network(
        self,
        stack: ExitStack,
        clock: Clock | None = None,
        sockets: SocketOptions = UPSTREAM,
        watch_peers: bool = False,
    ) -> Any:
        """The decode side's `Transport` with those PUSH-socket options, closed when `stack` closes;
        `watch_peers`: it counts PUSH-socket peers that went away (`peers_gone`, `wait_peers_gone`)."""
        raise NotImplementedError

    def prefill(
        self, stack: ExitStack, net: Any, tp_size: int, backend: str = "default", index: int = 0
    ) -> Any:
        """A restartable prefill reachable through `net` (`bootstrap_addr`, `kill`, `restart`);
        `index` tells apart several prefills in one world."""
        raise NotImplementedError

    def worker_pool(self, size: int = 2, *, hold_exit_waiters: bool = True) -> WorkerPool:
        """The DP dispatcher's encoder workers."""
        raise NotImplementedError

    @contextmanager
    def serving(self, server: Any) -> Iterator[tuple[Any, str]]:
        """Start `server` (a bootstrap server); yield a transport that reaches it and its address."""
        raise NotImplementedError
        yield


class MockKit(Kit):
    name = "mock"

    def network(
        self,
        stack: ExitStack,
        clock: Clock | None = None,
        sockets: SocketOptions = UPSTREAM,
        watch_peers: bool = False,
    ) -> Any:
        from reference.transport.mock import MockNetwork  # counts peers gone always, synchronously

        net = MockNetwork(clock, immediate=sockets.immediate)
        stack.callback(net.close)
        return net

    def prefill(
        self, stack: ExitStack, net: Any, tp_size: int, backend: str = "default", index: int = 0
    ) -> Any:
        from reference.prefill.mock import MockPrefill

        return MockPrefill(net, f"10.0.0.{index + 1}:8998", tp_size=tp_size)

    def worker_pool(self, size: int = 2, *, hold_exit_waiters: bool = True) -> WorkerPool:
        from reference.transport.dp_mock import MockWorkerPool

        return MockWorkerPool(size, hold_exit_waiters=hold_exit_waiters)

    @contextmanager
    def serving(self, server: Any) -> Iterator[tuple[Any, str]]:
        with ExitStack() as stack:
            net = self.network(stack)
            server.start()
            stack.callback(server.close)
            net.add_prefill(MOCK_PREFILL_ADDR)
            net.serve(MOCK_PREFILL_ADDR, server.table.handle)
            yield net, MOCK_PREFILL_ADDR


class LoopbackKit(Kit):
    name = "loopback"

    def network(
        self,
        stack: ExitStack,
        clock: Clock | None = None,
        sockets: SocketOptions = UPSTREAM,
        watch_peers: bool = False,
    ) -> Any:
        from reference.transport.loopback import LoopbackTransport

        loopback = LoopbackTransport(sockets.send_timeout, sockets.immediate, watch_peers=watch_peers)
        stack.callback(loopback.close)
        return loopback

    def prefill(
        self, stack: ExitStack, net: Any, tp_size: int, backend: str = "default", index: int = 0
    ) -> Any:
        from reference.prefill.loopback import LoopbackPrefill

        return stack.enter_context(LoopbackPrefill(tp_size=tp_size, backend=backend))

    def worker_pool(self, size: int = 2, *, hold_exit_waiters: bool = True) -> WorkerPool:
        from reference.transport.dp_zmq import ZmqWorkerPool

        return ZmqWorkerPool(size, hold_exit_waiters=hold_exit_waiters)

    @contextmanager
    def serving(self, server: Any) -> Iterator[tuple[Any, str]]:
        with ExitStack() as stack:
            http = self.network(stack)
            server.start()
            stack.callback(server.close)
            yield http, server.address


class NetnsKit(Kit):
    """Loopback's processes and sockets, each host in its own network namespace (reference/netns/)."""

    name = "netns"

    def network(
        self,
        stack: ExitStack,
        clock: Clock | None = None,
        sockets: SocketOptions = UPSTREAM,
        watch_peers: bool = False,
    ) -> Any:
        from reference.netns import kit as netns

        return netns.network(stack, sockets, watch_peers)

    def prefill(
        self, stack: ExitStack, net: Any, tp_size: int, backend: str = "default", index: int = 0
    ) -> Any:
        from reference.netns import kit as netns

        return netns.prefill(stack, net, tp_size, backend, index)

    def worker_pool(self, size: int = 2, *, hold_exit_waiters: bool = True) -> WorkerPool:
        return LoopbackKit().worker_pool(size, hold_exit_waiters=hold_exit_waiters)  # decode-local

    @contextmanager
    def serving(self, server: Any) -> Iterator[tuple[Any, str]]:
        from reference.netns import kit as netns

        with netns.serving(server, UPSTREAM) as served:
            yield served


KITS: dict[str, Kit] = {kit.name: kit for kit in (MockKit(), LoopbackKit(), NetnsKit())}
assert tuple(KITS) == TRANSPORTS


def kit(name: str) -> Kit:
    """The kit for a transport name; a one-line ValueError naming the choices otherwise."""
    check_transport(name)
    return KITS[name]
