"""Wrong fix: fail a prefill's rooms at its first missed `/health` probe.

Tempting: the race needs a dead prefill's rooms to wait while mori cleans them up, and
two probes 5 s apart are 10 s of rooms waiting on a dead prefill; declaring it dead at
once shortens that window, and a prefill that missed one probe is probably gone anyway.
Wrong: one slow or unhealthy answer (a 503, an answer after 3 s) fails every request of a
prefill that is up; upstream tolerates `heartbeat_max_failures - 1` misses in a row.
Caught by the simulation (`dead-only-after-misses-in-a-row`, fault `unhealthy`).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _probe(self, addr: str) -> None:
        if self.transport.health(addr):
            self.heartbeat_failures[addr] = 0
            self._on_heartbeat_success(addr)
            return
        self._handle_node_failure(addr)  # no count: the first miss declares it dead


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
