"""A small network of hosts: one namespace each, joined through a bridge namespace.

    decode (198.18.0.2) --veth-- [bridge ns: br0] --veth-- prefill-0 (198.18.0.10) ...

Each host is a network namespace with `lo` and one veth end, `eth0`, addressed in
198.18.0.0/24 (inside 198.18.0.0/15, the range RFC 2544 reserves for benchmark tests);
its peer end sits in the bridge namespace, enslaved to `br0`, which has no address.
IPv6 is disabled in every namespace and no default route is ever added, so the only
routes are the connected 198.18.0.0/24 and loopback: no packet can leave the suite's
namespaces. Topologies never share a link, so every one reuses the same addresses.

Names are `pdr-<owner pid>-<topology>-<role>`. `close()` removes every namespace of
the topology (killing what runs inside); a guard process (`guard.py`) started with the
first topology removes whatever its owner left when the owner dies, however it dies;
and the first topology of a process sweeps the namespaces of owners that are gone.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from reference.netns import ns

SUBNET = "198.18.0.0/24"
DECODE_IP = "198.18.0.2"
PREFILL_IP_BASE = 10  # prefill i: 198.18.0.(10 + i)
IFNAME = "eth0"
ROOT = str(Path(__file__).resolve().parents[2])  # the folder that holds `reference`
_counter = itertools.count()
_guard_lock = threading.Lock()
_guards: dict[int, int] = {}  # owner pid -> the write end of its guard's pipe (forks start their own)


def ensure_guard() -> None:
    """Start this process's guard once, after sweeping the leftovers of dead owners."""
    pid = os.getpid()
    with _guard_lock:
        if pid in _guards:
            return
        ns.sweep_dead()
        read, write = os.pipe()
        os.set_inheritable(write, False)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
        }
        starter = subprocess.Popen(
            [sys.executable, "-m", "reference.netns.guard", ns.run_prefix(pid)],
            stdin=read, close_fds=True, env=env, cwd=ROOT,
        )  # fmt: skip
        os.close(read)
        starter.wait(ns.CMD_BOUND)  # it forked the guard and exited
        _guards[pid] = write  # never closed: our exit (however it comes) is the guard's EOF


@dataclass
class Host:
    role: str
    ns: str
    ip: str


@dataclass
class Topology:
    """Bridge namespace plus hosts; `add_host` wires one more, `close` removes all."""

    index: int = field(default_factory=lambda: next(_counter))
    hosts: dict[str, Host] = field(default_factory=dict)
    setup_seconds: float = 0.0
    teardown_seconds: float = 0.0

    def __post_init__(self) -> None:
        started = time.perf_counter()
        ensure_guard()
        self.prefix = f"{ns.run_prefix()}{self.index}-"
        self.bridge = f"{self.prefix}br"
        self._made: list[str] = []
        try:
            self._make_ns(self.bridge)
            ns.sh(["ip", "-n", self.bridge, "link", "add", "br0", "type", "bridge"])
            ns.sh(["ip", "-n", self.bridge, "link", "set", "br0", "up"])
        except BaseException:
            self.close()
            raise
        self.setup_seconds += time.perf_counter() - started

    def _make_ns(self, name: str) -> None:
        ns.sh(["ip", "netns", "add", name])
        self._made.append(name)
        ns.sh(ns.in_ns(name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                       "net.ipv6.conf.default.disable_ipv6=1"))  # fmt: skip
        ns.sh(["ip", "-n", name, "link", "set", "lo", "up"])

    def add_host(self, role: str, ip: str) -> Host:
        """A new namespace `role` at `ip`, its eth0 plugged into the bridge."""
        started = time.perf_counter()
        name = f"{self.prefix}{role}"
        port = f"v{len(self.hosts)}"
        self._make_ns(name)
        ns.sh(["ip", "-n", self.bridge, "link", "add", port, "type", "veth",
               "peer", "name", IFNAME, "netns", name])  # fmt: skip
        ns.sh(["ip", "-n", self.bridge, "link", "set", port, "master", "br0", "up"])
        ns.sh(["ip", "-n", name, "addr", "add", f"{ip}/24", "dev", IFNAME])
        ns.sh(["ip", "-n", name, "link", "set", IFNAME, "up"])
        host = self.hosts[role] = Host(role, name, ip)
        self.setup_seconds += time.perf_counter() - started
        return host

    def namespaces(self) -> list[str]:
        return list(self._made)

    def close(self) -> None:
        """Remove every namespace (and so every veth, route and nft table) and what runs in it."""
        started = time.perf_counter()
        for name in reversed(self._made):
            ns.remove(name)
        self._made.clear()
        self.teardown_seconds += time.perf_counter() - started
