"""Interleavings and topologies as data: who does what, in which order, with whom.

A `Sequence` is a list of `Step`s between named actors (threads, locks, tables,
processes). `plots.sequence_picture` draws it as a sequence diagram. The steps
describe the order each lesson's scenario forces with its hooks; each lesson keeps its
own in `reference/lessons/<id>/sequence.py`, and the notebooks then run that order live.

A `Topology` is boxes at grid positions and labelled arrows between them: who talks
to whom. `plots.topology_picture` draws it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

Kind = Literal["plain", "bug", "fix", "error", "note"]


@dataclass(frozen=True)
class Step:
    source: str
    target: str  # the same actor as `source`: a note on that actor's lifeline
    label: str
    kind: Kind = "plain"


@dataclass(frozen=True)
class Sequence:
    title: str
    actors: tuple[str, ...]
    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        unknown = {n for s in self.steps for n in (s.source, s.target)} - set(self.actors)
        if unknown:
            raise ValueError(f"steps name actors not in {self.actors}: {sorted(unknown)}")


@dataclass(frozen=True)
class Node:
    name: str
    x: float
    y: float
    group: str = ""  # e.g. "decode" or "prefill": boxes of one group share a colour


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str
    bend: float = 0.0  # curvature, to keep two arrows between the same boxes apart


@dataclass(frozen=True)
class Topology:
    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def __post_init__(self) -> None:
        names = {node.name for node in self.nodes}
        unknown = {n for e in self.edges for n in (e.source, e.target)} - names
        if unknown:
            raise ValueError(f"edges name nodes that do not exist: {sorted(unknown)}")


LESSONS_DRAWN = ("failed-resurrect", "live-set-race", "stale-bootstrap", "task-refs")


def interleaving(lesson: str, variant: str) -> Sequence:
    """The interleaving a lesson forces, from `reference/lessons/<id>/sequence.py`."""
    if lesson not in LESSONS_DRAWN or variant not in ("buggy", "fixed"):
        raise ValueError(f"no interleaving drawn for {lesson!r} / {variant!r}")
    module = importlib.import_module(f"reference.lessons.{lesson.replace('-', '_')}.sequence")
    return module.interleaving(variant == "fixed")
