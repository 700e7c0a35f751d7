"""The netns topology: its routes, its isolation, its teardown, its sweeps.

Needs root and iproute2/nftables (`.ci/run` installs them); otherwise every test skips
with the one-line reason. Each test removes what it builds; the leftover tests run the
CLI as a child and check, after a normal exit and after a SIGKILL of the whole run,
that no namespace, no process of the run, and no link or nft table in the root
namespace (the suite's veths and tables live in its namespaces only) is left.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from reference.netns import ns
from reference.netns.topology import DECODE_IP, Topology
from reference.netns.transport import NetnsTransport
from reference.transport.base import TransportError

pytestmark = [pytest.mark.netns, pytest.mark.skipif(bool(ns.unavailable()), reason=ns.unavailable())]
ROOT = Path(__file__).resolve().parents[1]
PREFILL_IP = "198.18.0.10"
LEFT_WITHIN = 10.0  # real seconds for the guard to sweep after its owner died


def _routes(name: str) -> list[str]:
    out = ns.sh(["ip", "-n", name, "-4", "route", "show", "table", "all"])
    out6 = ns.sh(["ip", "-n", name, "-6", "route", "show", "table", "all"])
    return [line for line in (out + out6).splitlines() if line.strip()]


@pytest.fixture
def topology():
    net = Topology()
    try:
        net.add_host("decode", DECODE_IP)
        net.add_host("prefill-0", PREFILL_IP)
        yield net
    finally:
        net.close()


def test_every_route_stays_inside_the_suite_range(topology):
    allowed = [ipaddress.IPv4Network("198.18.0.0/15"), ipaddress.IPv4Network("127.0.0.0/8")]
    for name in topology.namespaces():
        for line in _routes(name):
            first = line.split()
            dst = first[1] if first[0] in ("local", "broadcast") else first[0]
            assert dst != "default", f"{name}: {line}"
            assert any(ipaddress.IPv4Network(dst, strict=False).subnet_of(net) for net in allowed), line
    decode = topology.hosts["decode"].ns
    assert _routes(decode)[0].startswith("198.18.0.0/24 dev eth0"), _routes(decode)
    assert not ns.sh(["ip", "-n", decode, "-6", "addr"]).strip()  # IPv6 off: no link-local routes


def test_hosts_reach_each_other_and_nothing_else(topology):
    decode, prefill = topology.hosts["decode"].ns, topology.hosts["prefill-0"].ns
    with ns.entered(prefill):
        server = socket.create_server((PREFILL_IP, 0))
    port = server.getsockname()[1]
    with server, ns.entered(decode):
        with socket.create_connection((PREFILL_IP, port), timeout=2) as client:
            assert client.getsockname()[0] == DECODE_IP
        outside = socket.socket()
        with outside, pytest.raises(OSError) as refused:  # no route: refused before any packet
            outside.connect(("198.51.100.1", 9))
    assert refused.value.errno == errno.ENETUNREACH


def test_the_transport_talks_only_to_suite_addresses(topology):
    net = NetnsTransport(topology.hosts["decode"].ns, DECODE_IP)
    try:
        with pytest.raises(TransportError, match=r"only talks to 198\.18\.0\.0/15"):
            net.connect("tcp://127.0.0.1:9")
        assert not net.health("10.0.0.1:8998")
        assert net.bind_inbox(lambda frames: None).startswith(f"{DECODE_IP}:")
    finally:
        net.close()


def test_close_removes_every_namespace():
    net = Topology()
    net.add_host("decode", DECODE_IP)
    made = net.namespaces()
    net.close()
    assert made and not set(made) & set(ns.listed())
    assert net.setup_seconds > 0 and net.teardown_seconds > 0


def test_startup_sweep_removes_a_dead_owners_namespaces():
    dead = subprocess.run(["true"], check=True)  # a pid that has exited
    child = psutil.Popen(["true"])
    child.wait(5)
    name = f"{ns.run_prefix(child.pid)}0-br"
    ns.sh(["ip", "netns", "add", name])
    try:
        assert name in ns.sweep_dead()
        assert name not in ns.listed()
    finally:
        ns.remove(name)
    del dead


def _leftovers() -> tuple[list[str], list[str]]:
    """Namespaces of owners that are gone, and suite processes that outlived their run."""
    names = [n for n in ns.listed() if n.startswith(ns.SUITE) and not psutil.pid_exists(int(n.split("-")[1]))]
    procs = []
    for proc in psutil.process_iter(["cmdline", "ppid"]):
        line = " ".join(proc.info["cmdline"] or [])
        prefill = "reference.prefill.process" in line and "--host 198.18" in line
        guard = "reference.netns.guard" in line and not psutil.pid_exists(int(line.split("-")[-2]))
        if prefill or guard:
            procs.append(f"{proc.pid}: {line}")
    return names, procs


def _wait_clean() -> tuple[list[str], list[str]]:
    deadline = time.monotonic() + LEFT_WITHIN
    while True:
        left = _leftovers()
        if left == ([], []) or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _root_state() -> tuple[list[str], str]:
    """The root namespace's links (names) and nft tables: a run must leave them as they were."""
    links = sorted(
        line.split(":")[1].strip().split("@")[0] for line in ns.sh(["ip", "-o", "link"]).splitlines()
    )
    return links, ns.sh(["nft", "list", "tables"])


def _cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "reference", "--transport", "netns", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, start_new_session=True,
    )  # fmt: skip


def test_a_normal_run_leaves_nothing():
    before = _root_state()
    run = _cli("--lesson", "stale-bootstrap", "--variant", "fixed", "--json")
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err.decode()
    (row,) = json.loads(out)["results"]
    assert (row["transport"], row["verdict"]) == ("netns", "ok")
    assert _wait_clean() == ([], [])
    assert _root_state() == before


def test_a_run_killed_with_sigkill_leaves_nothing():
    before = _root_state()
    run = _cli("--lesson", "restart-recovery", "--variant", "buggy")
    try:
        deadline = time.monotonic() + 60
        while not any(" --host 198.18" in _cmdline(p) for p in _descendants(run.pid)):
            assert time.monotonic() < deadline and run.poll() is None, "no prefill started"
            time.sleep(0.05)
        owners = {str(p.pid) for p in _descendants(run.pid)}
        made = [n for n in ns.listed() if n.split("-")[1] in owners]
        os.killpg(run.pid, signal.SIGKILL)  # the CLI, its worker and the prefills, at once
    finally:
        run.kill()
        run.communicate(timeout=10)
    assert made, "the run had made no namespace when it was killed"
    assert _wait_clean() == ([], [])
    assert not set(made) & set(ns.listed())
    assert _root_state() == before


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:  # exited (or a zombie) meanwhile
        return ""


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
