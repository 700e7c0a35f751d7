"""The in-process mock network: deterministic, no sockets, faults by name.

A `MockNetwork` knows which bootstrap addresses answer. Faults are plain method calls
(`kill`, `revive`), so a scenario states exactly when a prefill stops answering. It
never blocks and never consults wall time.
"""

from __future__ import annotations


class MockNetwork:
    def __init__(self) -> None:
        self._alive: set[str] = set()
        self.health_probes = 0
        self.disconnected: list[str] = []

    def add_prefill(self, bootstrap_addr: str) -> None:
        self._alive.add(bootstrap_addr)

    def kill(self, bootstrap_addr: str) -> None:
        self._alive.discard(bootstrap_addr)

    def revive(self, bootstrap_addr: str) -> None:
        self._alive.add(bootstrap_addr)

    def health(self, bootstrap_addr: str) -> bool:
        self.health_probes += 1
        return bootstrap_addr in self._alive

    def disconnect(self, endpoint: str) -> None:
        self.disconnected.append(endpoint)

    def close(self) -> None:
        self._alive.clear()
