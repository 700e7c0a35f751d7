"""Network namespaces by name: create, enter (one thread), list, remove, sweep.

Everything the netns transport does to the kernel goes through here, as `ip`/`nft`
commands (iproute2, nftables) run as subprocesses with a bound, or as `setns(2)` on
the calling thread (`entered`). Names carry a per-run prefix, `pdr-<pid>-`, the pid
of the process that owns them: `sweep_dead()` removes every namespace of an owner
that is no longer alive (a run killed with SIGKILL), `sweep(prefix)` every namespace
of one run, killing the processes inside it first. Namespaces are the unit: deleting
one deletes its veth ends, its routes and its nft tables with it.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

SUITE = "pdr-"  # every namespace this suite makes starts with it
NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
CMD_BOUND = 10.0  # real seconds for one ip/nft/tc command
_NAME = re.compile(r"^pdr-(\d+)-")
_libc = ctypes.CDLL(None, use_errno=True)


class NetnsError(RuntimeError):
    """An ip/nft/tc command failed; one line."""


def unavailable() -> str:
    """Why the netns transport cannot run here, in one line ("" when it can)."""
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (run as root, or skip the netns tier)"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("tc", "iproute2")):
        if shutil.which(tool) is None:
            return f"`{tool}` not found: apt-get install -y {package}"
    return ""


def run_prefix(pid: int | None = None) -> str:
    """This process's namespace-name prefix (forks get their own)."""
    return f"{SUITE}{os.getpid() if pid is None else pid}-"


def sh(args: Sequence[str], stdin: str | None = None, check: bool = True) -> str:
    """Run one command (bounded); NetnsError with its stderr's first line when it fails."""
    try:
        done = subprocess.run(
            list(args), input=stdin, capture_output=True, text=True, timeout=CMD_BOUND, check=False
        )
    except subprocess.TimeoutExpired:
        raise NetnsError(f"{' '.join(args)}: no answer within {CMD_BOUND:g} s") from None
    if check and done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        raise NetnsError(f"{' '.join(args)}: {first}")
    return done.stdout


def in_ns(ns: str, *args: str) -> list[str]:
    """A command line that runs `args` inside namespace `ns`."""
    return ["ip", "netns", "exec", ns, *args]


def listed() -> list[str]:
    """Every namespace name under /run/netns."""
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def pids_in(ns: str) -> list[int]:
    """Processes whose network namespace is `ns` (`ip netns pids`)."""
    out = sh(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def remove(ns: str, spare: int | None = None) -> None:
    """Kill every process inside `ns` (but `spare`), then delete it (idempotent)."""
    for pid in pids_in(ns):
        if pid not in (spare, os.getpid()):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    sh(["ip", "netns", "delete", ns], check=False)


def sweep(prefix: str) -> list[str]:
    """Remove every namespace whose name starts with `prefix`; the names removed."""
    gone = [ns for ns in listed() if ns.startswith(prefix)]
    for ns in gone:
        remove(ns)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_dead() -> list[str]:
    """The start-up sweep: remove the namespaces of every run whose owner has exited."""
    gone: list[str] = []
    for ns in listed():
        match = _NAME.match(ns)
        if match and not _alive(int(match.group(1))):
            remove(ns)
            gone.append(ns)
    return gone


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(f"setns: {os.strerror(err)}")


@contextmanager
def entered(ns: str) -> Iterator[None]:
    """Run the block with this thread (only) inside namespace `ns`.

    Sockets made inside keep that namespace for life; threads started inside inherit it.
    The thread goes back to the namespace it was in, however the block ends.
    """
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"{NETNS_DIR}/{ns}", os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)
