"""A variant package turned into mutants: every operator over every component module of
`reference/fixed` and `reference/hardened`, one edit per mutant, identical mutated
sources counted once, each with the lessons that drive the classes its module defines.

A mutant's `key` hashes what the edit is: its variant, file, enclosing function, operator
and that function's source before and after the edit (`edit_key`). An edit elsewhere in the
file leaves it alone, a change to the function gives a new key: `judgments.py` is keyed by
it, so a judgment holds exactly while the function it read is unchanged (an argument that
leans on other code, e.g. who else reads a field, has to be re-read when that code changes).
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

from reference.mutate.operators import Edit, Source, mutate

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


WEAKREF_IMPORT = "import weakref\n"  # the module-level line `weak-ref` adds with its edit


Span = tuple[str, int, int]  # a function's qualified name, its lines (0-based, half-open)


def _innermost(spans: list[Span], first: int, last: int) -> Span | None:
    """The innermost function whose lines hold lines [first, last) (an insertion when equal)."""
    holding = [s for s in spans if s[1] <= first and last <= s[2]]
    return min(holding, key=lambda s: s[2] - s[1]) if holding else None


def _changed(before: list[str], after: list[str], spans: list[Span]) -> list[str]:
    """Each function the edit changed: its name, its lines before and after."""
    same_start = 0
    while same_start < min(len(before), len(after)) and before[same_start] == after[same_start]:
        same_start += 1
    same_end = 0
    while (
        same_end < min(len(before), len(after)) - same_start
        and before[len(before) - 1 - same_end] == after[len(after) - 1 - same_end]
    ):
        same_end += 1
    one = _innermost(spans, same_start, len(before) - same_end)
    if one is not None:
        regions = [(one, one[1], one[2] + len(after) - len(before))]
    else:  # an edit of several functions (`move-guard`): each of them, by the line diff
        changes = [
            (i1, i2, (j2 - j1) - (i2 - i1))
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, False).get_opcodes()
            if tag != "equal"
        ]
        touched = dict.fromkeys(span for i1, i2, _ in changes if (span := _innermost(spans, i1, i2)))
        regions = [
            (
                span,
                span[1] + sum(d for _, i2, d in changes if i2 <= span[1]),
                span[2] + sum(d for _, i2, d in changes if i2 <= span[2]),
            )
            for span in touched
        ]
    return [
        "".join([qual, "\n", *before[start:end], "\0", *after[a:b]]) for (qual, start, end), a, b in regions
    ]


def edit_key(variant: str, file: str, original: str, edit: Edit, spans: list[Span]) -> str:
    """A hash of the edit alone: variant, file, function, operator, and the source of the
    function(s) it changed before and after. `spans` are `Source(original).function_lines()`."""
    before = original.splitlines(keepends=True)
    after = edit.source.splitlines(keepends=True)
    if edit.operator == "weak-ref" and after.count(WEAKREF_IMPORT) > before.count(WEAKREF_IMPORT):
        del after[after.index(WEAKREF_IMPORT)]
    text = "\n".join((variant, file, edit.function, edit.operator, *_changed(before, after, spans)))
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def variant_files(variant: str) -> list[Path]:
    return sorted(p for p in (ROOT / "reference" / variant).glob("*.py") if p.name != "__init__.py")


def generate(variants: tuple[str, ...] = VARIANTS) -> list[Mutant]:
    mutants = []
    for variant in variants:
        for path in variant_files(variant):
            code = path.read_text()
            lessons = lessons_for(code)
            spans = Source(code).function_lines()
            for edit in mutate(code):
                key = edit_key(variant, path.name, code, edit, spans)
                mutants.append(Mutant(key, variant, path.name, edit, lessons))
    return mutants


def sample(mutants: list[Mutant], count: int | None, seed: int) -> list[Mutant]:
    """`count` mutants drawn with `seed`, in generation order; all of them when count is None."""
    if count is None or count >= len(mutants):
        return list(mutants)
    chosen = set(random.Random(seed).sample(range(len(mutants)), count))
    return [m for i, m in enumerate(mutants) if i in chosen]
