"""How components reach each other: in-process (`mock`), real sockets (`loopback`), or
real sockets between network namespaces (`netns`, see reference/netns/).

`TRANSPORTS` is the one list of transport names; `kits.py` is the one place a name
becomes objects.
"""

TRANSPORTS = ("mock", "loopback", "netns")
IN_PROCESS = frozenset({"mock"})  # every rank in this process: no bytes cross processes
SAME_SCENARIOS = {"netns": "loopback"}  # netns runs every loopback scenario unchanged


def runs_on(transports: tuple[str, ...], name: str) -> bool:
    """A check (or lesson) with scenarios on `transports` runs on transport `name`."""
    return name in transports or SAME_SCENARIOS.get(name) in transports


def check_transport(name: str) -> None:
    """A one-line ValueError naming the choices for an unknown transport name."""
    if name not in TRANSPORTS:
        raise ValueError(f"unknown transport {name!r} (choose from {', '.join(TRANSPORTS)})")


def transport_unusable(name: str) -> str:
    """Why transport `name` cannot run on this machine, in one line ("" when it can)."""
    if name != "netns":
        return ""
    from reference.netns import ns  # light: no sockets, no subprocess until asked

    return ns.unavailable()
