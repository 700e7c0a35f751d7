"""Find background tasks whose only reference is the event loop's weak one.

PR #33048 found its five sites with an AST scan; its follow-ups (issue #34434, PR #34480)
ask for the scan as a ratchet. This is ours: a call to `create_task` or `ensure_future`
(`asyncio.create_task`, `loop.create_task`, a bare imported name, ...) whose result is
discarded, either as an expression statement or by assigning it to `_`. The result of
an awaited call, or one stored anywhere, is fine. `tg.create_task(...)` on a name bound
by `async with asyncio.TaskGroup() as tg` is fine too: the group holds its tasks.

    python -m reference.lessons.task_refs.taskcheck PATH...        # files or directories; exit 1 on findings

ruff's RUF006 catches the expression-statement form of `asyncio.create_task` in lint;
this scan also catches `_ =`, `loop.create_task` and `ensure_future`, and reports the
known sites in `reference/buggy/`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

SPAWNERS = frozenset({"create_task", "ensure_future"})


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    col: int
    call: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}:{self.col}: {self.call}() result discarded; the loop holds tasks weakly"
        )


def _spawner_name(node: ast.AST) -> str | None:
    """`create_task`/`ensure_future` as written (`asyncio.create_task`), else None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id in SPAWNERS:
        return func.id
    if isinstance(func, ast.Attribute) and func.attr in SPAWNERS:
        return f"{ast.unparse(func.value)}.{func.attr}"
    return None


def _task_group_names(tree: ast.AST) -> set[str]:
    """Names bound by `async with ...TaskGroup() as NAME` (their create_task is held)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncWith | ast.With):
            for item in node.items:
                expr, target = item.context_expr, item.optional_vars
                if isinstance(expr, ast.Call) and isinstance(target, ast.Name):
                    called = (
                        expr.func.attr if isinstance(expr.func, ast.Attribute) else ast.unparse(expr.func)
                    )
                    if called == "TaskGroup":
                        names.add(target.id)
    return names


def _is_discarded(node: ast.AST) -> bool:
    """An expression statement, `_ = value` or `_: T = value`."""
    if isinstance(node, ast.Expr):
        return True
    if isinstance(node, ast.Assign):
        return [ast.unparse(t) for t in node.targets] == ["_"]
    return isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "_"


def _discarded_calls(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        value = getattr(node, "value", None)
        if isinstance(value, ast.expr) and _is_discarded(node):
            yield value


def scan_source(source: str, path: str = "<string>") -> list[Finding]:
    tree = ast.parse(source, filename=path)
    groups = _task_group_names(tree)
    findings = []
    for call in _discarded_calls(tree):
        name = _spawner_name(call)
        if name is None or (name.count(".") == 1 and name.split(".")[0] in groups):
            continue
        findings.append(Finding(path, call.lineno, call.col_offset + 1, name))
    return sorted(findings, key=lambda f: (f.path, f.line, f.col))


def _python_files(paths: Iterable[str]) -> Iterator[Path]:
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(path.rglob("*.py"))
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(f"no such file or directory: {given}")


def scan_paths(paths: Iterable[str]) -> list[Finding]:
    """Findings in every `.py` file under `paths` (files or directories)."""
    return [f for file in _python_files(paths) for f in scan_source(file.read_text(), str(file))]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m reference.lessons.task_refs.taskcheck PATH...", file=sys.stderr)
        return 2
    try:
        findings = scan_paths(args)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        print(f"python -m reference.lessons.task_refs.taskcheck: error: {exc}", file=sys.stderr)
        return 2
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
