"""A prefill process (bootstrap server and ranks) on its own host of the suite's network.

`NetnsPrefill` is `LoopbackPrefill` started with `ip netns exec <its namespace>` and
`--host <its address>`: the same process, the same ready line, kill and restart
behind the same bootstrap address (the namespace and address outlive the process),
reached by the decode through the bridge. `pid` is the live process's, for the
nemeses (SIGSTOP/SIGCONT). Proxy settings are not passed on.
"""

from __future__ import annotations

import sys

from reference.netns import ns
from reference.netns.topology import Host
from reference.prefill.loopback import LoopbackPrefill

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class NetnsPrefill(LoopbackPrefill):
    def __init__(self, host: Host, tp_size: int = 2, backend: str = "default") -> None:
        self.where = host
        self.host = host.ip
        super().__init__(tp_size=tp_size, backend=backend)

    def _command(self, args: list[str]) -> list[str]:
        unset = [flag for var in PROXY_VARS for flag in ("-u", var, "-u", var.upper())]
        return ns.in_ns(self.where.ns, "env", *unset, sys.executable, "-m",
                        "reference.prefill.process", *args, "--host", self.host)  # fmt: skip

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid
