"""Hand-edited upstream code decides the verdict (`reference/upstream/trees.py`).

The suite makes source trees from the 0.5.19 wheel, applies each edit of `AUDIT` and
runs the lesson that must see it through `--sglang TREE`. Before the adapter sent
through upstream's own sockets, ran upstream's own `abort()`, heartbeat loop and
status values, the four breaking edits gave `ok` and the correct one `bug`; each now
gives what upstream's own code does. The hand-written revert of each PR's hunk
(`REVERTS`) is `bug` (#33048's `latent`: 0.5.19's cleanup awaits `asyncio.sleep`,
whose timer keeps the bare task alive). Unmodified trees of 0.5.19 and 0.5.23 stay `ok`
on the four fix lessons."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_wheels import NEWEST, wheel

from reference.lessons import LESSONS, Options, run_lesson
from reference.upstream import FIRST_FIXED, load_sglang
from reference.upstream.errors import UpstreamError
from reference.upstream.trees import AUDIT, REVERTS, Edit, make_tree


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sglang-trees")


@pytest.mark.parametrize("tree", AUDIT + REVERTS, ids=[tree.name for tree in AUDIT + REVERTS])
def test_an_edit_of_upstreams_code_decides(tree, trees: Path) -> None:
    path = make_tree(wheel("0.5.19"), trees / tree.name, tree.edits)
    result = run_lesson(LESSONS[tree.lesson], load_sglang(str(path)), Options())
    assert result.verdict == tree.verdict, f"{tree.what}: {result.verdict}: {result.symptom}"


@pytest.mark.parametrize("version", ["0.5.19", NEWEST])
@pytest.mark.parametrize("lesson", sorted(FIRST_FIXED))
def test_an_unmodified_tree_is_ok_on_the_fix_lessons(version: str, lesson: str, trees: Path) -> None:
    path = trees / f"unmodified-{version}"
    if not path.exists():
        make_tree(wheel(version), path)
    result = run_lesson(LESSONS[lesson], load_sglang(str(path)), Options())
    assert (result.variant, result.verdict) == (f"sglang-{version}", "ok"), result.symptom


def test_an_edit_whose_text_is_not_there_once_is_refused(trees: Path) -> None:
    with pytest.raises(UpstreamError, match="occurs 0 times"):
        make_tree(wheel("0.5.19"), trees / "bad-edit", (Edit("common/conn.py", "no such text\n", ""),))
