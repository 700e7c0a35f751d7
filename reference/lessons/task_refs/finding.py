"""What one component's part of lesson `task-refs` found.

The lesson drives every component whose background task upstream created bare (PR
#33048: the DP dispatcher's three loops, the bootstrap server's cleanup) and merges
their findings into one verdict: `bug` when any component lost a task or left its job
undone, `ok` when every one kept its loops and did its job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference.harness.result import Event


@dataclass(frozen=True)
class Finding:
    component: str
    problems: list[str]  # empty: the component's loops survived and did their job
    fine: str  # the one-line summary when there is no problem
    details: dict[str, Any] = field(default_factory=dict)
    timeline: list[Event] = field(default_factory=list)


def destroyed_problem(destroyed: list[str]) -> str:
    """The log line asyncio writes when GC destroys a pending task, with the task names."""
    return f"Task was destroyed but it is pending! ({', '.join(destroyed)}, by gc.collect())"
