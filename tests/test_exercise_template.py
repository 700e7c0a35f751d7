"""`notebooks/exercises/my_fix/` stays a faithful copy of the buggy components, with the fixes
left as exercises: same code as `reference/buggy/` (comments and docstrings aside),
the same exported classes, an `EXERCISE(<lesson>)` hint wherever the buggy form has a
`BUG(<lesson>)` tag, and no answers. Checked with `--impl` it shows every bug."""

import ast
import re
from pathlib import Path

import pytest

from reference.lessons import LESSONS, Options, run_lesson
from reference.variants import load_impl

ROOT = Path(__file__).resolve().parents[1]
BUGGY, TEMPLATE = ROOT / "reference" / "buggy", ROOT / "notebooks" / "exercises" / "my_fix"


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _code(path: Path) -> str:
    """The module's AST without docstrings: comments never reach the AST."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            node.body = body[1:]  # type: ignore[attr-defined]
    return ast.dump(tree)


@pytest.mark.parametrize("name", sorted(p.name for p in BUGGY.glob("*.py") if p.name != "__init__.py"))
def test_template_module_is_the_buggy_code(name):
    template = TEMPLATE / name
    assert template.exists(), (
        f"copy reference/buggy/{name} to notebooks/exercises/my_fix/{name}, with each BUG tag "
        "turned into an EXERCISE(<lesson>) hint"
    )
    assert _code(template) == _code(BUGGY / name)
    buggy_tags = set(re.findall(r"# BUG\(([a-z-]+)\)", (BUGGY / name).read_text()))
    text = template.read_text()
    assert set(re.findall(r"# EXERCISE\(([a-z-]+)\)", text)) == buggy_tags
    assert not re.search(r"# (BUG|FIX)\(", text), "the template must not give the answer away"


def test_template_exports_the_buggy_components():
    template, buggy = load_impl(str(TEMPLATE)), load_impl("reference.buggy")
    assert template.module.__all__ == buggy.module.__all__


def test_template_shows_every_bug_under_impl():
    variant = load_impl(str(TEMPLATE))
    verdicts = {lesson.id: run_lesson(lesson, variant, Options()).verdict for lesson in LESSONS.values()}
    assert verdicts == dict.fromkeys(LESSONS, "bug")
