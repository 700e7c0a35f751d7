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
    left_sockets = _sockets() - sockets
    if left_sockets:  # one nobody references closes when collected; a full collection costs
        gc.collect()  # ~0.4 s in a big heap, so only when there is something to collect
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


# The slow tier (`-m slow`): tests that start real processes, servers, sockets, KV
# backends, notebook kernels or child interpreters, fuzz, or wait out a time bound.
# `pytest -m "not slow"` is the quick tier (in-process, mock transport, virtual clock):
# every lesson, check, exploration, revert and mutation sample. ci/test.sh runs both.
SLOW_MODULES = {
    "test_dataplane.py": "real KV backends (torch, NIXL, Mooncake) between processes",
    "test_bootstrap_fuzz.py": "1,000+ generated requests to a real server",
    "test_bootstrap_rawfuzz.py": "malformed HTTP to a real server",
    "test_bootstrap_wedge.py": "10,000 requests to a server in a child process",
    "test_bootstrap_connections.py": "a real server and its read timeouts",
    "test_jupyter_lab.py": "starts JupyterLab",
    "test_notebook_render.py": "executes a notebook in a kernel",
    "test_notebook_exercises.py": "executes the notebooks' exercise cells",
    "test_impl_bound.py": "child interpreters hitting their time bounds",
    "test_isolation.py": "forked workers killed at their time bounds",
    "test_cli_bad_input.py": "the CLI as a child process, bounds included",
    "test_leftovers.py": "pytest in a child process",
    "test_flake_script.py": "ci/flake.sh running pytest in child processes",
    "test_sim_seed_plans.py": "one search in two child interpreters",
}
SLOW_TESTS = {  # one test of an otherwise quick module: the CLI or pytest as a child process
    "test_protocol.py::test_cli_impl_by_path_and_by_name",
    "test_protocol.py::test_pytest_impl_runs_every_lesson_against_the_module",
    "test_protocol.py::test_pytest_impl_collects_only_the_checks_and_explorations",
    "test_protocol.py::test_pytest_impl_takes_a_path_after_a_space",
    "test_cli.py::test_in_process_gives_the_same_verdicts_as_the_isolated_workers",
    "test_task_refs_taskcheck.py::test_cli_exit_codes_and_one_line_errors",
    "test_task_refs_taskcheck.py::test_lint_flags_a_bare_create_task_except_in_buggy",
    "test_task_refs_taskcheck.py::test_a_test_ending_with_a_pending_task_fails",
    "test_exercise_template.py::test_template_shows_every_bug_under_impl",
    "test_dataplane_cli.py::test_the_backend_shows_in_json_and_table_only_when_asked_for",
    "test_bootstrap_server.py::test_cli_serves_health_survives_a_malformed_put_and_stops_on_sigint",
    "test_bootstrap_server.py::test_cli_bad_flags_get_one_line",
    "test_bootstrap_server.py::test_cli_on_a_busy_port_gets_one_line_and_exit_1",
    "test_bootstrap_server.py::test_cli_warns_in_one_line_before_binding_anything_but_loopback",
}


def _is_slow(item: pytest.Item) -> bool:
    module, _, name = item.nodeid.split("[")[0].rpartition("/")[2].partition("::")
    return (
        item.get_closest_marker("loopback") is not None  # real sockets between processes
        or module in SLOW_MODULES
        or f"{module}::{name}" in SLOW_TESTS
    )


def pytest_collection_modifyitems(items):
    """Mark the slow tier; give every coroutine test `no_leaked_tasks`, set up first so it
    checks last."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
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
