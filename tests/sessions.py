"""Processes of a session: a test starts a CLI with `start_new_session=True` (its pid is
the session id), then finds and stops everything it left, whatever process group or
parent each has by then (an orphan is re-parented, but keeps its session)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes in session `sid`."""
    found = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) == sid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except (OSError, psutil.Error):
            continue
    return found


def kill_session(sid: int) -> list[int]:
    """SIGKILL every live process of session `sid`; returns the pids that were alive."""
    left = session_members(sid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    return left


ROOT = Path(__file__).resolve().parents[1]


def run_in_session(args: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, list[int]]:
    """`python ARGS` from the repository root in its own session, bounded; then every
    process it left is killed. Returns what it printed and the pids that were still alive."""
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
        proc.communicate()
        left = kill_session(proc.pid)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), left
