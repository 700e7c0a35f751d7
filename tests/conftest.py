"""Shared fixtures. `no_leftovers` is autouse: a test that leaves a thread, a child
process or a socket behind fails, naming what it left. `no_leaked_tasks` is added to
every `async def` test: one that ends with tasks still pending on its loop fails (the
runner would otherwise cancel them quietly when it closes the loop)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import threading
import time

import psutil
import pytest

from reference.aioloop import pending_tasks
from reference.dataplane import BACKENDS, backend_status
from reference.lessons import LESSONS  # noqa: F401 - imported before `--impl` forks workers

GRACE = 2.0  # real seconds for a stopping thread to finish after its owner closed it


def _sockets() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


def _wait_threads(before: set[threading.Thread]) -> list[str]:
    end = time.monotonic() + GRACE
    for thread in set(threading.enumerate()) - before:
        thread.join(max(0.0, end - time.monotonic()))
    return sorted(t.name for t in set(threading.enumerate()) - before if t.is_alive())


@pytest.fixture(autouse=True)
def no_leftovers():
    """Fail a test that leaves threads, child processes or sockets behind."""
    me = psutil.Process()
    threads, children, sockets = set(threading.enumerate()), set(me.children(recursive=True)), _sockets()
    yield
    left_threads = _wait_threads(threads)
    new_children = [p for p in me.children(recursive=True) if p not in children]
    for proc in new_children:
        proc.kill()
    gc.collect()
    left_sockets = _sockets() - sockets
    problems = []
    if left_threads:
        problems.append(f"threads left running: {left_threads}")
    if new_children:
        problems.append(f"child processes left: {[p.pid for p in new_children]}")
    if left_sockets:
        problems.append(f"sockets left open: {len(left_sockets)}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture
async def no_leaked_tasks():
    """Fail an async test that ends with tasks still pending on its event loop."""
    yield
    leaked = pending_tasks(asyncio.get_running_loop(), exclude=asyncio.current_task())
    if leaked:
        pytest.fail(f"tasks left pending: {leaked}", pytrace=False)


def pytest_collection_modifyitems(items):
    """Give every coroutine test `no_leaked_tasks`, set up first so it checks last."""
    for item in items:
        if (
            inspect.iscoroutinefunction(getattr(item, "obj", None))
            and "no_leaked_tasks" not in item.fixturenames
        ):
            item.fixturenames.insert(0, "no_leaked_tasks")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pd-reference")
    group.addoption(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="KV transfer backend(s) to test (default: all usable)",
    )
    group.addoption("--device", default="cpu", help="memory for backend tests: cpu (default) or cuda[:N]")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each KV transfer backend in turn; skipped with its one-line reason when absent."""
    name = request.param
    chosen = request.config.getoption("backend")
    if chosen and name not in chosen:
        pytest.skip(f"{name}: not selected (--backend {' --backend '.join(chosen)})")
    status = backend_status(name)
    if not status.usable:
        pytest.skip(f"{name}: {status.reason}")
    return name


@pytest.fixture
def device(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("device")
