"""Catch what an asyncio event loop reports about its tasks, the way a log reader sees it.

When the garbage collector destroys a task that is still pending, asyncio calls the
loop's exception handler with "Task was destroyed but it is pending!"; when a finished
task's exception was never retrieved, with "Task exception was never retrieved". Those
log lines are the only trace either leaves. Scenarios install this capture for their
duration so the lines become evidence. It keeps strings only: holding the task from
the handler's context would resurrect it and change what it observes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

DESTROYED = "Task was destroyed but it is pending!"
UNRETRIEVED = "Task exception was never retrieved"


@dataclass(frozen=True)
class LoopReport:
    message: str
    coroutine: str  # the task's coroutine name, "" when the report is not about a task
    exception: str = ""


@dataclass
class LoopErrors:
    reports: list[LoopReport] = field(default_factory=list)

    def about(self, message: str) -> list[LoopReport]:
        return [report for report in self.reports if report.message == message]

    def destroyed(self) -> list[str]:
        """Coroutine names of pending tasks the garbage collector destroyed."""
        return [report.coroutine for report in self.about(DESTROYED)]


def _coroutine_name(context: dict[str, Any]) -> str:
    task = context.get("task") or context.get("future")
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    return getattr(coro, "__name__", "")


@contextmanager
def loop_errors(loop: asyncio.AbstractEventLoop) -> Iterator[LoopErrors]:
    caught = LoopErrors()
    previous = loop.get_exception_handler()

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        described = f"{type(exc).__name__}: {exc}" if exc is not None else ""
        caught.reports.append(
            LoopReport(str(context.get("message", "")), _coroutine_name(context), described)
        )

    loop.set_exception_handler(handler)
    try:
        yield caught
    finally:
        loop.set_exception_handler(previous)
