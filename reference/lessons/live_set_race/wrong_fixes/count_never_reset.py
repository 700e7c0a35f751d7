"""Wrong fix: count a prefill's missed probes without resetting the count on a 200.

Tempting: a prefill that keeps missing probes now and then (a flapping one) is as bad as
a dead one for the rooms waiting on it, so let every miss count until the prefill is
declared dead, and start again only then. Wrong: two single misses an hour apart declare
a healthy prefill dead and fail its requests; upstream's heartbeat resets the count on
every 200, so only misses in a row count. Caught by the simulation
(`dead-only-after-misses-in-a-row`, faults `unhealthy`, `hb_miss`).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _probe(self, addr: str) -> None:
        if self.transport.health(addr):
            self._on_heartbeat_success(addr)  # the count stays
            return
        self.heartbeat_failures[addr] = self.heartbeat_failures.get(addr, 0) + 1
        if self.heartbeat_failures[addr] >= self.config.heartbeat_max_failures:
            self.heartbeat_failures[addr] = 0
            self._handle_node_failure(addr)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
