"""Concurrency and lifecycle mutation operators, in the style of ConMAn (Bradbury, Cordy and
Dingel, "Mutation operators for concurrent Java", 2006), on Python source with libcst.

Each operator takes a parsed module (`Source`) and yields one `Edit` per place it applies:
the whole mutated module, the line it changed and a one-line description. Only function
bodies are mutated (module and class level code is imports and declarations). The
operators, with ConMAn's name where there is one:

| operator | edit |
|---|---|
| `remove-lock` (RSB) | `with <...lock>:` removed, its body kept in place |
| `shrink-lock` (SKCR) | the first or the last statement of a locked block moved out of it |
| `split-lock` (SPCR) | a locked block split in two at one statement boundary |
| `move-lock` (SHCR) | the locked block shifted one statement down or up |
| `is-to-eq` | `is` -> `==`, `is not` -> `!=` (not against `None`: see `_is_none`) |
| `delete-stmt` | one call, assignment or `del` deleted (`pass` where it was alone) |
| `swap-stmts` | two adjacent statements of one block swapped |
| `early-return` | a bare `return` at the start of a block, or before a statement of a function's own body |
| `weak-ref` | an attribute's `set()` -> `weakref.WeakSet()`, `dict[..., Any]` -> `WeakValueDictionary()` |
| `local-ref` | `a.b.add(x)` / `a.b.append(x)` / `a.b[k] = v` stores into a function-local container instead |
| `move-guard` | a method's leading `if <guard>: ...; return` moved around one call of it in the module |

Operators here were preferred to cosmic-ray plugins: cosmic-ray is not in the project's
environment and its plugins register through package entry points (a change to the
project's packaging), while libcst (already installed with mutmut) edits whole blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


@dataclass(frozen=True)
class Edit:
    operator: str
    function: str  # Class.method the edit is in
    line: int  # 1-based, in the unmutated module
    description: str
    source: str  # the whole mutated module


@dataclass(frozen=True)
class _Block:
    node: cst.IndentedBlock
    function: str
    func: cst.FunctionDef
    top: bool  # the function's own body


class _Index(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.names: list[str] = []
        self.funcs: list[tuple[cst.FunctionDef, str]] = []
        self.func_stack: list[cst.FunctionDef] = []
        self.blocks: list[_Block] = []
        self.comparisons: list[tuple[cst.ComparisonTarget, str]] = []
        self.statements: list[tuple[cst.SimpleStatementLine, str, cst.FunctionDef]] = []

    def _qual(self) -> str:
        return ".".join(self.names)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.names.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.append(node.name.value)
        self.func_stack.append(node)
        self.funcs.append((node, self._qual()))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.names.pop()
        self.func_stack.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if self.func_stack:
            func = self.func_stack[-1]
            self.blocks.append(_Block(node, self._qual(), func, node is func.body))

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        if self.func_stack:
            self.comparisons.append((node, self._qual()))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if self.func_stack:
            self.statements.append((node, self._qual(), self.func_stack[-1]))


class Source:
    """One module, parsed once, with the nodes the operators look at."""

    def __init__(self, code: str) -> None:
        wrapper = MetadataWrapper(cst.parse_module(code))
        self.module = wrapper.module
        self.original = self.module.code
        self.index = _Index()
        wrapper.visit(self.index)
        self._pos = wrapper.resolve(PositionProvider)

    def line(self, node: cst.CSTNode) -> int:
        return self._pos[node].start.line

    def function_lines(self) -> list[tuple[str, int, int]]:
        """Each function's qualified name and its lines, 0-based and half-open, decorators
        included."""
        spans = []
        for func, qual in self.index.funcs:
            start = min([self._pos[func].start.line, *(self._pos[d].start.line for d in func.decorators)])
            spans.append((qual, start - 1, self._pos[func].end.line))
        return spans

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node).strip()

    def short(self, node: cst.CSTNode) -> str:
        """The node's first line of code, comments left out, at most 70 characters."""
        lines = [x for x in self.code(node).split("\n") if x.strip() and not x.strip().startswith("#")]
        text = " ".join(re.sub(r"\s+#.*$", "", lines[0] if lines else "").split())
        return text if len(text) <= 70 else text[:67] + "..."

    def replace_block(self, block: cst.IndentedBlock, body: Sequence[cst.BaseStatement]) -> str:
        return _replace(self.module, block, block.with_changes(body=_nonempty(body)))


def _replace(module: cst.Module, old: cst.CSTNode, new: cst.CSTNode) -> str:
    """The module's code with `old` (found by identity) replaced by `new`."""
    replaced = module.deep_replace(old, new)
    assert isinstance(replaced, cst.Module)
    return replaced.code


PASS = cst.SimpleStatementLine([cst.Pass()])
RETURN = cst.SimpleStatementLine([cst.Return()])


def _nonempty(body: Sequence[cst.BaseStatement]) -> tuple[cst.BaseStatement, ...]:
    return tuple(body) if body else (PASS,)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _first_code(body: Sequence[cst.BaseStatement]) -> int:
    return 1 if body and _is_docstring(body[0]) else 0


def _locked(source: Source, stmt: cst.BaseStatement) -> bool:
    if not isinstance(stmt, cst.With) or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    return any(source.code(item.item).endswith("lock") for item in stmt.items)


def _with_body(stmt: cst.With, body: Sequence[cst.BaseStatement]) -> cst.With:
    assert isinstance(stmt.body, cst.IndentedBlock)
    return stmt.with_changes(body=stmt.body.with_changes(body=_nonempty(body)))


def _lock_sites(source: Source) -> Iterator[tuple[_Block, int, cst.With, tuple[cst.BaseStatement, ...]]]:
    for block in source.index.blocks:
        for i, stmt in enumerate(block.node.body):
            if _locked(source, stmt):
                assert isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock)
                yield block, i, stmt, tuple(stmt.body.body)


def remove_lock(source: Source) -> Iterator[Edit]:
    for block, i, stmt, inner in _lock_sites(source):
        body = block.node.body
        new = (*body[:i], *inner, *body[i + 1 :])
        yield Edit(
            "remove-lock",
            block.function,
            source.line(stmt),
            f"`{source.short(stmt)}` removed, body kept",
            source.replace_block(block.node, new),
        )


def shrink_lock(source: Source) -> Iterator[Edit]:
    for block, i, stmt, inner in _lock_sites(source):
        if len(inner) < 2:
            continue
        body = block.node.body
        first_out = (*body[:i], inner[0], _with_body(stmt, inner[1:]), *body[i + 1 :])
        last_out = (*body[:i], _with_body(stmt, inner[:-1]), inner[-1], *body[i + 1 :])
        for where, new, moved in (("before", first_out, inner[0]), ("after", last_out, inner[-1])):
            yield Edit(
                "shrink-lock",
                block.function,
                source.line(moved),
                f"`{source.short(moved)}` moved {where} `{source.short(stmt)}`",
                source.replace_block(block.node, new),
            )


def split_lock(source: Source) -> Iterator[Edit]:
    for block, i, stmt, inner in _lock_sites(source):
        body = block.node.body
        for j in range(1, len(inner)):
            new = (*body[:i], _with_body(stmt, inner[:j]), _with_body(stmt, inner[j:]), *body[i + 1 :])
            yield Edit(
                "split-lock",
                block.function,
                source.line(inner[j]),
                f"`{source.short(stmt)}` split before `{source.short(inner[j])}`",
                source.replace_block(block.node, new),
            )


def move_lock(source: Source) -> Iterator[Edit]:
    for block, i, stmt, inner in _lock_sites(source):
        body = block.node.body
        if i + 1 < len(body):  # down: the first locked statement leaves, the next one joins
            nxt = body[i + 1]
            new = (*body[:i], inner[0], _with_body(stmt, (*inner[1:], nxt)), *body[i + 2 :])
            yield Edit(
                "move-lock",
                block.function,
                source.line(stmt),
                f"`{source.short(stmt)}` shifted down over `{source.short(nxt)}`",
                source.replace_block(block.node, new),
            )
        lowest = _first_code(body) if block.top else 0
        if i > lowest:  # up: the one before joins, the last leaves
            prev = body[i - 1]
            new = (*body[: i - 1], _with_body(stmt, (prev, *inner[:-1])), inner[-1], *body[i + 1 :])
            yield Edit(
                "move-lock",
                block.function,
                source.line(stmt),
                f"`{source.short(stmt)}` shifted up over `{source.short(prev)}`",
                source.replace_block(block.node, new),
            )


def _is_none(node: cst.BaseExpression) -> bool:
    """`x is None` -> `x == None` is left out: every value these components compare with
    None (builtins: dict, list, set, str, int, float, None) equals None exactly when it
    is None, so the mutant would be equivalent by construction."""
    return isinstance(node, cst.Name) and node.value == "None"


def is_to_eq(source: Source) -> Iterator[Edit]:
    parents: dict[int, cst.Comparison] = {}
    for node in _walk(source.module):
        if isinstance(node, cst.Comparison):
            for target in node.comparisons:
                parents[id(target)] = node
    for target, function in source.index.comparisons:
        op = target.operator
        comparison = parents[id(target)]
        if _is_none(target.comparator) or _is_none(comparison.left):
            continue
        new_op: cst.BaseCompOp
        if isinstance(op, cst.Is):
            new_op, text = (
                cst.Equal(whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after),
                "`is` -> `==`",
            )
        elif isinstance(op, cst.IsNot):
            new_op, text = (
                cst.NotEqual(whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after),
                "`is not` -> `!=`",
            )
        else:
            continue
        yield Edit(
            "is-to-eq",
            function,
            source.line(target),
            f"{text} in `{source.short(comparison)}`",
            _replace(source.module, target, target.with_changes(operator=new_op)),
        )


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


_DELETABLE = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del)


def _deletable(stmt: cst.BaseStatement) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if isinstance(small, cst.Expr):
        value = small.value.expression if isinstance(small.value, cst.Await) else small.value
        return isinstance(value, cst.Call)
    return isinstance(small, _DELETABLE)


def delete_stmt(source: Source) -> Iterator[Edit]:
    for block in source.index.blocks:
        body = block.node.body
        for i, stmt in enumerate(body):
            if _deletable(stmt):
                yield Edit(
                    "delete-stmt",
                    block.function,
                    source.line(stmt),
                    f"`{source.short(stmt)}` deleted",
                    source.replace_block(block.node, (*body[:i], *body[i + 1 :])),
                )


def swap_stmts(source: Source) -> Iterator[Edit]:
    for block in source.index.blocks:
        body = block.node.body
        start = _first_code(body) if block.top else 0
        for i in range(start, len(body) - 1):
            a, b = body[i], body[i + 1]
            yield Edit(
                "swap-stmts",
                block.function,
                source.line(a),
                f"`{source.short(a)}` swapped with the next `{source.short(b)}`",
                source.replace_block(block.node, (*body[:i], b, a, *body[i + 2 :])),
            )


def _is_return(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], (cst.Return, cst.Raise))


def early_return(source: Source) -> Iterator[Edit]:
    for block in source.index.blocks:
        body = block.node.body
        start = _first_code(body) if block.top else 0
        positions = range(start, len(body)) if block.top else range(start, start + 1)
        for i in positions:
            if i < len(body) and _is_return(body[i]):
                continue
            where = "at the start of" if i == start else f"before `{source.short(body[i])}` in"
            what = block.function if block.top else "the block"
            yield Edit(
                "early-return",
                block.function,
                source.line(body[i]),
                f"`return` inserted {where} {what}",
                source.replace_block(block.node, (*body[:i], RETURN, *body[i:])),
            )


def _self_attr(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _call_of(node: cst.BaseExpression, module: str, name: str) -> bool:
    return (
        isinstance(node, cst.Call)
        and not node.args
        and (
            (isinstance(node.func, cst.Name) and node.func.value == name and not module)
            or (
                isinstance(node.func, cst.Attribute)
                and node.func.attr.value == name
                and isinstance(node.func.value, cst.Name)
                and node.func.value.value == module
            )
        )
    )


def _with_weakref_import(module: cst.Module) -> cst.Module:
    body = list(module.body)
    k = _first_code(body)
    while k < len(body) and "__future__" in module.code_for_node(body[k]):
        k += 1
    return module.with_changes(body=(*body[:k], cst.parse_statement("import weakref\n"), *body[k:]))


def weak_ref(source: Source) -> Iterator[Edit]:
    for stmt, function, _ in source.index.statements:
        small = stmt.body[0]
        if not isinstance(small, (cst.Assign, cst.AnnAssign)) or small.value is None:
            continue
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        if len(targets) != 1 or not _self_attr(targets[0]):
            continue
        value = small.value
        annotation = source.code(small.annotation.annotation) if isinstance(small, cst.AnnAssign) else ""
        if _call_of(value, "", "set"):
            weak = "weakref.WeakSet()"
        elif isinstance(value, cst.Dict) and not value.elements and annotation.endswith("Any]"):
            weak = "weakref.WeakValueDictionary()"
        else:
            continue
        new = source.module.deep_replace(value, cst.parse_expression(weak))
        assert isinstance(new, cst.Module)
        yield Edit(
            "weak-ref",
            function,
            source.line(stmt),
            f"`{source.short(stmt)}`: held in a `{weak}`",
            _with_weakref_import(new).code,
        )


def _container_store(small: cst.BaseSmallStatement) -> tuple[cst.Attribute, str] | None:
    """The attribute container a statement stores into, and the empty local that replaces it."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute):
            empty = {"add": "set()", "append": "[]"}.get(func.attr.value)
            if empty:
                return func.value, empty
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute):
            return target.value, "{}"
    return None


def local_ref(source: Source) -> Iterator[Edit]:
    for stmt, function, func in source.index.statements:
        found = _container_store(stmt.body[0])
        if found is None:
            continue
        container, empty = found
        local = f"_local_{container.attr.value.lstrip('_')}"
        new_stmt = stmt.deep_replace(container, cst.Name(local))
        new_func = func.deep_replace(stmt, new_stmt)
        assert isinstance(new_func, cst.FunctionDef) and isinstance(new_func.body, cst.IndentedBlock)
        body = new_func.body.body
        k = _first_code(body)
        init = cst.parse_statement(f"{local} = {empty}\n")
        new_func = new_func.with_changes(body=new_func.body.with_changes(body=(*body[:k], init, *body[k:])))
        yield Edit(
            "local-ref",
            function,
            source.line(stmt),
            f"`{source.short(stmt)}` stores into a local `{empty}` instead of `{source.code(container)}`",
            _replace(source.module, func, new_func),
        )


class _Rename(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, cst.BaseExpression]) -> None:
        self.mapping = mapping

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        new = self.mapping.get(original_node.value)
        if new is None:
            return updated_node
        if isinstance(new, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            return new
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


class _ReplaceAll(cst.CSTTransformer):
    """Several nodes replaced in one pass, each found by identity."""

    def __init__(self, mapping: dict[int, cst.CSTNode]) -> None:
        self.mapping = mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        return self.mapping.get(id(original_node), updated_node)


def _guard(func: cst.FunctionDef) -> cst.If | None:
    """A leading `if <test>: ...; return [value]` with no else."""
    if not isinstance(func.body, cst.IndentedBlock):
        return None
    body = func.body.body
    k = _first_code(body)
    if k >= len(body):
        return None
    first = body[k]
    if (
        not isinstance(first, cst.If)
        or first.orelse is not None
        or not isinstance(first.body, cst.IndentedBlock)
    ):
        return None
    last = first.body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return)):
        return None
    return first


def _calls_of(
    source: Source, name: str
) -> Iterator[tuple[cst.SimpleStatementLine, str, cst.FunctionDef, cst.Call]]:
    for stmt, function, func in source.index.statements:
        small = stmt.body[0]
        if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
            continue
        call = small.value
        if (
            _self_attr(call.func)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == name
            and func.name.value != name
            and all(a.keyword is None and not a.star for a in call.args)
        ):
            yield stmt, function, func, call


def move_guard(source: Source) -> Iterator[Edit]:
    for func, qual in source.index.funcs:
        guard = _guard(func)
        if guard is None or "." not in qual:
            continue
        params = [p.name.value for p in func.params.params]
        if not params or params[0] != "self":
            continue
        assert isinstance(func.body, cst.IndentedBlock) and isinstance(guard.body, cst.IndentedBlock)
        rest = tuple(s for s in func.body.body if s is not guard)
        without = func.with_changes(body=func.body.with_changes(body=_nonempty(rest)))
        for stmt, caller, caller_func, call in _calls_of(source, func.name.value):
            if len(call.args) != len(params) - 1:
                continue
            mapping: dict[str, cst.BaseExpression] = {
                p: a.value for p, a in zip(params[1:], call.args, strict=True)
            }
            mapping["self"] = cst.Name("self")
            renamer = _Rename(mapping)
            test = guard.test.visit(renamer)
            action = tuple(s.visit(renamer) for s in guard.body.body[:-1])
            assert isinstance(test, cst.BaseExpression)
            moved = cst.If(
                test=test,
                body=cst.IndentedBlock(body=_nonempty(action)),  # type: ignore[arg-type]
                orelse=cst.Else(body=cst.IndentedBlock(body=(stmt.with_changes(leading_lines=()),))),
                leading_lines=stmt.leading_lines,
            )
            new_caller = caller_func.deep_replace(stmt, moved)
            module = source.module.visit(_ReplaceAll({id(func): without, id(caller_func): new_caller}))
            assert isinstance(module, cst.Module)
            yield Edit(
                "move-guard",
                qual,
                source.line(guard),
                f"guard `{source.short(guard)}` of {qual} moved into its caller {caller}",
                module.code,
            )


OPERATORS: dict[str, Callable[[Source], Iterator[Edit]]] = {
    "remove-lock": remove_lock,
    "shrink-lock": shrink_lock,
    "split-lock": split_lock,
    "move-lock": move_lock,
    "is-to-eq": is_to_eq,
    "delete-stmt": delete_stmt,
    "swap-stmts": swap_stmts,
    "early-return": early_return,
    "weak-ref": weak_ref,
    "local-ref": local_ref,
    "move-guard": move_guard,
}


def mutate(code: str, operators: Sequence[str] = tuple(OPERATORS)) -> list[Edit]:
    """Every edit the operators make to `code` that changes it and still compiles, the first
    of each distinct mutated source only, in a deterministic order."""
    source = Source(code)
    seen = {source.original}
    edits = []
    for name in operators:
        for edit in OPERATORS[name](source):
            if edit.source in seen:
                continue
            seen.add(edit.source)
            try:
                compile(edit.source, "<mutant>", "exec")
            except SyntaxError:
                continue
            edits.append(edit)
    return edits
