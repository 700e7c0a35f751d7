"""A variant package turned into mutants: every operator over every component module of
`reference/fixed` and `reference/hardened`, one edit per mutant, identical mutated
sources counted once, each with the lessons that drive the classes its module defines.

A mutant's `key` (a hash of its variant, file and mutated source) names it stably across
runs of the same source; `judgments.py` is keyed by it.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

from reference.mutate.operators import Edit, mutate

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("fixed", "hardened")


@dataclass(frozen=True)
class Mutant:
    key: str
    variant: str  # fixed or hardened
    file: str  # the module's file name in the variant package
    edit: Edit
    lessons: tuple[str, ...]  # the lessons whose components the file defines

    @property
    def name(self) -> str:
        return f"{self.variant}/{self.file}:{self.edit.line} {self.edit.operator}"


def lessons_for(code: str) -> tuple[str, ...]:
    """The lessons on the default (mock) transport that need a class this module defines
    (`Lesson.needs` and each check's)."""
    from reference.lessons import LESSONS  # a lesson import costs 0.3 s: only when asked

    classes = set(re.findall(r"^class (\w+)\b", code, flags=re.MULTILINE))
    found = []
    for lesson in LESSONS.values():
        if "mock" not in lesson.transports:  # the default run's transport
            continue
        needs = set(lesson.needs)
        for check in lesson.checklist("mock"):
            needs |= set(check.needs or ())
        if classes & {n.partition(".")[0] for n in needs}:
            found.append(lesson.id)
    return tuple(found)


def variant_files(variant: str) -> list[Path]:
    return sorted(p for p in (ROOT / "reference" / variant).glob("*.py") if p.name != "__init__.py")


def generate(variants: tuple[str, ...] = VARIANTS) -> list[Mutant]:
    mutants = []
    for variant in variants:
        for path in variant_files(variant):
            code = path.read_text()
            lessons = lessons_for(code)
            for edit in mutate(code):
                digest = hashlib.sha1(f"{variant}/{path.name}\n{edit.source}".encode()).hexdigest()[:10]
                mutants.append(Mutant(digest, variant, path.name, edit, lessons))
    return mutants


def sample(mutants: list[Mutant], count: int | None, seed: int) -> list[Mutant]:
    """`count` mutants drawn with `seed`, in generation order; all of them when count is None."""
    if count is None or count >= len(mutants):
        return list(mutants)
    chosen = set(random.Random(seed).sample(range(len(mutants)), count))
    return [m for i, m in enumerate(mutants) if i in chosen]
