"""Nemeses: faults on the suite's network and processes, each with its own heal.

Each nemesis is a context manager: entering it starts the fault and records a `Fault`
on the history, leaving it heals the fault (however the block ends) and records when.

- `Partition(topology, a, b)`: nft drop rules in the bridge namespace (the switch) for
  frames between hosts `a` and `b` (both ways), or, `one_way=True`, only what `b` sends
  to `a` (optionally only to TCP port `port`: e.g. the decode's inbox, so `/health`
  still answers while statuses never arrive). The rules live in their own nft table,
  deleted on heal (and with the namespace, whatever happens).
- `Pause(prefill)`: SIGSTOP on the prefill process, SIGCONT on heal (slow, not dead).
- `Kill(prefill)`: SIGKILL; heal starts it again behind the same bootstrap address.
- `Restart(prefill)`: kill and start at once (the fault is the new ports); heal is a no-op.
- `Bandwidth(topology, host, rate)`: a tbf qdisc on the host's eth0; heal removes it.
"""

from __future__ import annotations

import itertools
import os
import signal
from typing import Any

from reference.netns import ns
from reference.netns.history import Fault, History
from reference.netns.topology import IFNAME, Topology

_tables = itertools.count()


class Nemesis:
    name = "nemesis"
    hosts: tuple[str, ...] = ()

    def __init__(self, history: History) -> None:
        self.history = history
        self.fault: Fault | None = None

    def start(self) -> None:
        raise NotImplementedError

    def heal(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Nemesis:
        self.start()
        self.fault = self.history.fault(self.name, self.hosts)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.heal()
        finally:
            if self.fault is not None:
                self.history.heal(self.fault)


class Partition(Nemesis):
    def __init__(self, history: History, topology: Topology, a: str, b: str,
                 one_way: bool = False, port: int | None = None) -> None:  # fmt: skip
        super().__init__(history)
        self.bridge, self.at, self.peer = topology.bridge, topology.hosts[a], topology.hosts[b]
        self.one_way, self.port = one_way, port
        self.table = f"pdr_nemesis_{next(_tables)}"
        arrow = f"{b}->{a}" if one_way else f"{a}<->{b}"
        self.name = f"partition {arrow}" + (f" (tcp port {port})" if port else "")
        self.hosts = (a, b)

    def rules(self) -> str:
        """Drops in the bridge's forward path: the packets vanish on the wire, as in a real
        partition (a drop in the sender's own output chain would fail its send at once, EPERM)."""
        only = f" tcp dport {self.port}" if self.port else ""
        rules = [f"    ip saddr {self.peer.ip} ip daddr {self.at.ip}{only} drop"]
        if not self.one_way:
            rules.append(f"    ip saddr {self.at.ip} ip daddr {self.peer.ip} drop")
        return "\n".join([f"table bridge {self.table} {{",
                          "  chain forward { type filter hook forward priority 0; policy accept;",
                          *rules, "  }", "}"]) + "\n"  # fmt: skip

    def start(self) -> None:
        ns.sh(ns.in_ns(self.bridge, "nft", "-f", "-"), stdin=self.rules())

    def heal(self) -> None:
        ns.sh(ns.in_ns(self.bridge, "nft", "delete", "table", "bridge", self.table))


class Pause(Nemesis):
    def __init__(self, history: History, prefill: Any) -> None:
        super().__init__(history)
        self.prefill, self.pid = prefill, prefill.pid
        self.name, self.hosts = f"pause (SIGSTOP pid {self.pid})", (prefill.where.role,)

    def start(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def heal(self) -> None:
        if self.prefill.pid == self.pid:
            os.kill(self.pid, signal.SIGCONT)


class Kill(Nemesis):
    def __init__(self, history: History, prefill: Any) -> None:
        super().__init__(history)
        self.prefill = prefill
        self.name, self.hosts = "kill (then start again)", (prefill.where.role,)

    def start(self) -> None:
        self.prefill.kill()

    def heal(self) -> None:
        self.prefill.start()


class Restart(Kill):
    def __init__(self, history: History, prefill: Any) -> None:
        super().__init__(history, prefill)
        self.name = "restart behind the same bootstrap address"

    def start(self) -> None:
        self.prefill.restart()

    def heal(self) -> None:
        pass


class Bandwidth(Nemesis):
    def __init__(self, history: History, topology: Topology, host: str, rate: str = "1mbit") -> None:
        super().__init__(history)
        self.at, self.rate = topology.hosts[host], rate
        self.name, self.hosts = f"bandwidth {rate} (tbf)", (host,)

    def start(self) -> None:
        ns.sh(["ip", "netns", "exec", self.at.ns, "tc", "qdisc", "add", "dev", IFNAME, "root",
               "tbf", "rate", self.rate, "burst", "16kbit", "latency", "200ms"])  # fmt: skip

    def heal(self) -> None:
        ns.sh(["ip", "netns", "exec", self.at.ns, "tc", "qdisc", "del", "dev", IFNAME, "root"])
