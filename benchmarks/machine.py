"""Describe the machine a run happened on, and how loaded it was meanwhile.

The numbers of a shared machine mean little without its load, so every result file
carries the CPU model and count, the Python build, the git commit, the load average
at the start and the end, and the machine's CPU utilisation sampled once a second
during the run, split into what this run's own processes used and what the rest of
the machine (other users) used: that is the load our numbers competed with.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "reference", "benchmarks/*.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = out.stdout.strip() or "unknown"
    return commit + ("+uncommitted" if dirty.stdout.strip() else "")


def describe() -> dict[str, Any]:
    return {
        "cpu_model": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "git_commit": _git_commit(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class OwnCpu:
    """CPU seconds used by this process and its children, counted per process."""

    def __init__(self) -> None:
        self._me = psutil.Process()
        self._seen: dict[int, float] = {}

    def delta(self) -> float:
        used = 0.0
        for proc in [self._me, *self._me.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total = times.user + times.system
            used += total - self._seen.get(proc.pid, 0.0)
            self._seen[proc.pid] = total
        return used


class LoadSampler:
    """Samples CPU use every `period` seconds on a daemon thread: ours and everyone else's."""

    def __init__(self, period: float = 1.0) -> None:
        self._period = period
        self._stop = threading.Event()
        self._busy: list[float] = []  # machine-wide busy cores
        self._others: list[float] = []  # busy cores not used by this run
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)
        self._load_start = os.getloadavg()

    def _run(self) -> None:
        cpus = os.cpu_count() or 1
        own = OwnCpu()
        psutil.cpu_percent(None)
        own.delta()
        last = time.monotonic()
        while not self._stop.wait(self._period):
            now = time.monotonic()
            busy = psutil.cpu_percent(None) / 100 * cpus
            mine = own.delta() / max(now - last, 1e-3)
            last = now
            self._busy.append(busy)
            self._others.append(max(0.0, busy - mine))

    def __enter__(self) -> LoadSampler:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(self._period + 1.0)

    def summary(self) -> dict[str, Any]:
        busy, others = self._busy or [0.0], self._others or [0.0]
        return {
            "loadavg_1_5_15_at_start": [round(x, 2) for x in self._load_start],
            "loadavg_1_5_15_at_end": [round(x, 2) for x in os.getloadavg()],
            "busy_cores_median": round(statistics.median(busy), 2),
            "busy_cores_by_others_median": round(statistics.median(others), 2),
            "busy_cores_by_others_max": round(max(others), 2),
            "samples": len(self._busy),
            "wall_seconds": round(time.monotonic() - self._started, 1),
        }
