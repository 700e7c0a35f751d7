"""Two residual lessons' checks for a reused room id, each killing a semantic mutant.

- stale-tracker's exploration `late-cleanup-keeps-equal-set` (reference/explore/stale_tracker.py):
  mori's cleanup fetches its set, the prefill fails and a new request re-tracks the same room
  id, then the cleanup goes on. A cleanup that asks whether its set is still the tracker's by
  contents takes the new, equal set for its own and pops it (hardened mutant `7b3ed69b5d`:
  `is not` -> `!=`).
- late-kv-write's check `reused-room-counts-own-answers` (reference/lessons/late_kv_write):
  the story with room A's id first used by a request P that succeeded and is cleared late.
  A reopened room that keeps P's answer count holds A's pages for too few answers (hardened
  mutant `bdd1b4e790`: `_open_lifecycle` no longer pops `answers`).

Each holds on hardened (and the lesson's right fixes) and fails on its mutant, built
through the mutation API as the mutation run builds it.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.harness.options import Options
from reference.lessons.late_kv_write.scenario import observe, reused_room
from reference.mutate.mutants import ROOT, edit_key
from reference.mutate.operators import Source, mutate
from reference.mutate.runner import _copy
from reference.variants import load_impl

EQUAL_SET_MUTANT, ANSWERS_KEPT_MUTANT = "7b3ed69b5d", "bdd1b4e790"
DISCARD_ONLY = "reference/lessons/stale_tracker/right_fixes/discard_only.py"
SHARE = 20.0  # seconds; each search ends in well under a second, the bound only caps a hang


def _mutant(key: str, workdir: Path) -> types.ModuleType:
    """Hardened with the one mutant `key` of its manager.py applied."""
    code = (ROOT / "reference" / "hardened" / "manager.py").read_text()
    spans = Source(code).function_lines()
    edit = next(e for e in mutate(code) if edit_key("hardened", "manager.py", code, e, spans) == key)
    path = _copy("hardened", workdir, f"mutant_{key}", ("manager.py", edit.source))
    return load_impl(str(path)).module


def _equal_set_property():
    (prop,) = [p for p in PROPERTIES["stale-tracker"] if p.id == "late-cleanup-keeps-equal-set"]
    return prop


@pytest.mark.parametrize("module", [reference.hardened, DISCARD_ONLY], ids=["hardened", "discard_only"])
def test_equal_set_property_holds_on_the_correct_forms(module) -> None:
    loaded = module if isinstance(module, types.ModuleType) else load_impl(module).module
    held = deep.explore_within(_equal_set_property(), loaded, SHARE)
    assert held.verdict == "ok", held.symptom
    assert "(exhaustive)" in held.symptom, held.symptom


def test_a_cleanup_comparing_sets_by_contents_pops_the_reused_rooms_set(tmp_path) -> None:
    found = deep.explore_within(_equal_set_property(), _mutant(EQUAL_SET_MUTANT, tmp_path), SHARE)
    assert found.verdict == "bug", found.symptom
    assert "room 1, reused by a new request, is tracked nowhere" in found.symptom and found.schedule


def test_reused_room_check_holds_on_hardened() -> None:
    seen = reused_room(reference.hardened, Options())
    assert seen.verdict == "ok", seen.symptom
    assert seen.details["b_bytes_ok_after"] and not seen.details["in_doubt_at_end"]


def test_a_reopened_room_keeping_the_answer_count_frees_pages_still_written(tmp_path) -> None:
    mutant = _mutant(ANSWERS_KEPT_MUTANT, tmp_path)
    assert observe(mutant, Options()).verdict == "ok"  # the story's room ids are fresh: it cannot tell
    seen = reused_room(mutant, Options())
    assert seen.verdict == "bug", seen.symptom
    assert "overwrote B's KV" in seen.symptom and seen.details["shared_pages"]
