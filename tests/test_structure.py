"""The repository's shape, enforced: no import circles, infrastructure that never imports a
variant, nothing cited that a clone does not contain, and only the designed names at the top.

Imports are read with `ast` (every `import` and `from ... import`, also inside functions and
`if TYPE_CHECKING:` blocks), so a circle hidden behind a lazy or type-only import counts too.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reference", "benchmarks")
VARIANTS = ("reference.buggy", "reference.fixed", "reference.hardened")
# Who may import a variant by name: the variants themselves, the lessons and their teaching
# code (which show buggy against fixed), and the upstream adapter (which mirrors them).
MAY_IMPORT_VARIANTS = (*VARIANTS, "reference.lessons", "reference.teaching", "reference.upstream")
TOP_LEVEL = {"pyproject.toml", "reference", "notebooks", "tests", "benchmarks", "ci", "README.md"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports (a `from pkg import x` names pkg.x if it is a module)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles():
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _variant_importers(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        for target in targets
        if target.startswith(VARIANTS) and not name.startswith(MAY_IMPORT_VARIANTS)
    )


def test_infrastructure_never_imports_a_variant():
    assert _variant_importers(_graph()) == []


def test_the_variant_rule_catches_an_infrastructure_import():
    graph = {"reference.prefill.process": {"reference.fixed.bootstrap_server"}, "reference.fixed": set()}
    assert _variant_importers(graph) == ["reference.prefill.process imports reference.fixed.bootstrap_server"]


def _tracked() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in names.splitlines() if (ROOT / name).is_file()]


def test_the_top_level_holds_only_the_designed_names():
    top = {path.relative_to(ROOT).parts[0] for path in _tracked()}
    assert {name for name in top if not name.startswith(".")} <= TOP_LEVEL


# Built from pieces so that this file does not cite what it forbids.
OUTSIDE = re.compile(
    "|".join((r"\.\./" + "shared", "DESIGN" + r"\.md", "UPSTREAM" + r"\.md", r"\bshared" + "/seeds"))
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TEXT = {".md", ".py", ".toml", ".sh", ".yaml", ".yml", ".json", ".ipynb", ".txt", ""}


def _text(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        return "\n".join("".join(cell["source"]) for cell in cells)
    return path.read_text(errors="replace")


def _citation_problems(path: Path, text: str) -> list[str]:
    problems = [
        f"{path.name}: cites {m.group(0)!r}, which the repository does not contain"
        for m in OUTSIDE.finditer(text)
    ]
    if path.suffix in (".md", ".ipynb"):  # markdown; a .py file's brackets are code
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:|^#|^<", target):
                continue  # a URL, an anchor
            if not (path.parent / target.split("#")[0]).exists():
                problems.append(f"{path.relative_to(ROOT)}: link {target!r} does not resolve")
    return problems


def test_nothing_cites_a_file_the_repository_does_not_contain():
    problems = []
    for path in _tracked():
        if path.suffix in TEXT and "results" not in path.parts and path.stat().st_size < 2_000_000:
            problems += _citation_problems(path, _text(path))
    assert problems == []


@pytest.mark.parametrize(
    "text",
    [
        "see ../" + "shared" + "/seeds/001.txt",
        "as in DESIGN" + ".md section 7",
        "UPSTREAM" + ".md 8.2",
        "[a](no/such.md)",
    ],
)
def test_the_citation_check_flags_an_outside_reference(text):
    assert _citation_problems(ROOT / "README.md", text)
