"""Execute upstream's disaggregation files under their own names; find classes by name.

Upstream moves code between releases (0.5.22 moved the bootstrap server to
`common/bootstrap.py`; the DP dispatcher left `encode_server.py` for
`encoder/runtime.py` in 0.5.19), so nothing here names a module path: `UpstreamLoad.get
("CommonKVBootstrapServer")` finds the file of the `disaggregation` package that
defines the class at top level and executes it, and every file it imports from that
package is executed the same way, on demand, from the same source.

Everything else is at the narrowest boundary we could find:
- other `sglang.*` modules (server args, env settings, runtime context, network helpers,
  metrics, tracing) are the stand-ins of `standins.py`; a name without a stand-in
  imports as a placeholder that raises `NoStandIn` naming it when used;
- a third-party package that is not installed here (a transfer engine's native
  module, `prometheus_client`) is a stand-in module too; torch is one unless the
  process already imported it (importing it costs seconds);
- a top-level statement that raises while its file executes (a metrics counter made
  at import time, a native call) is skipped and recorded in `skipped`, so the rest of
  the file, the classes the lessons drive, still loads. `get` names the statement when
  the asked-for definition is one of them.

The code objects keep upstream's file name (`<sglang-0.5.19>/sglang/srt/...`) and line
numbers, so a trace or a traceback points into the wheel. `sys.modules` is touched only
while a file executes and restored afterwards: several versions load side by side and
a real sglang installed in the same environment is never shadowed.
"""

from __future__ import annotations
import __future__

import ast
import importlib.abc
import importlib.machinery
import linecache
import logging
import re
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reference.upstream.deps import MissingDependency, check_import
from reference.upstream.errors import NoStandIn, UpstreamError
from reference.upstream.source import UpstreamSource
from reference.upstream.standins import StandIn, sglang_standins, stands_in_for_third_party

# Upstream logs an error per prefill failure; keep that off the CLI's stderr unless the
# user configured logging (a NullHandler stops Python's last-resort stderr handler).
logging.getLogger("sglang").addHandler(logging.NullHandler())

DISAGG = "srt/disaggregation/"
_DEFINITION = re.compile(r"^(?:class|def|async def)\s+(\w+)", re.M)


def module_name(relpath: str) -> str:
    """`srt/disaggregation/common/conn.py` -> `sglang.srt.disaggregation.common.conn`."""
    return "sglang." + relpath.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


class UpstreamLoad:
    """One upstream version's disaggregation package, executed file by file on demand."""

    def __init__(self, source: UpstreamSource) -> None:
        self.source = source
        self.modules: dict[str, types.ModuleType] = {}  # module name -> upstream module or stand-in
        self.upstream: dict[str, types.ModuleType] = {}  # relpath -> executed upstream module
        self.skipped: dict[str, list[tuple[int, str]]] = {}  # relpath -> (line, why) per statement
        self._index: dict[str, list[str]] | None = None
        self._standins = sglang_standins()
        self._executing: list[str] = []  # the files executing now, innermost last

    # -- finding definitions by name ----------------------------------------------
    def where(self, name: str) -> list[str]:
        """The package files that define `name` at top level (shortest path first)."""
        if self._index is None:
            index: dict[str, list[str]] = {}
            for rel in sorted(self.source.files(), key=lambda r: (r.count("/"), r)):
                if rel.startswith(DISAGG) and rel.endswith(".py"):
                    for found in _DEFINITION.findall(self.source.read(rel) or ""):
                        index.setdefault(found, []).append(rel)
            self._index = index
        return self._index.get(name, [])

    def has(self, name: str) -> bool:
        return bool(self.where(name))

    def get(self, name: str) -> Any:
        """The upstream class or function `name`, its file executed; `UpstreamError` if
        this version has no such definition or its statement could not run here."""
        files = self.where(name)
        if not files:
            raise UpstreamError(f"not present in {self.source.label}: {name}")
        relpath = files[0]
        module = self.module(relpath)
        if name not in vars(module):
            why = self._why_missing(relpath, name)
            raise UpstreamError(f"{self.source.label}: sglang/{relpath}: {name} could not be defined: {why}")
        return vars(module)[name]

    def _why_missing(self, relpath: str, name: str) -> str:
        line = _definition_line(self.source.read(relpath) or "", name)
        for skipped_line, why in self.skipped.get(relpath, []):
            if skipped_line == line:
                return f"line {line}: {why}"
        return "its statement did not run"

    # -- executing files -----------------------------------------------------------
    def module(self, relpath: str) -> types.ModuleType:
        name = module_name(relpath)
        if name not in self.modules:
            with self._installed():
                importlib.import_module(name)
        return self.modules[name]

    def importing(self) -> Any:
        """For a call into upstream code that imports inside a function (the staging
        handler's `from sglang... import`): this version's modules are what it imports."""
        return self._installed()

    @contextmanager
    def _installed(self) -> Iterator[None]:
        saved = {key: mod for key, mod in sys.modules.items() if _ours(key) or key in self.modules}
        for key in saved:
            del sys.modules[key]
        sys.modules.update(self.modules)
        finder = _Finder(self)
        sys.meta_path.insert(0, finder)
        try:
            yield
        finally:
            sys.meta_path.remove(finder)
            for key in [key for key in sys.modules if _ours(key) or isinstance(sys.modules[key], StandIn)]:
                self.modules.setdefault(key, sys.modules[key])
                del sys.modules[key]
            sys.modules.update(saved)

    def _spec(self, name: str) -> importlib.machinery.ModuleSpec | None:
        top = name.partition(".")[0]
        # Never a stand-in for what the driven code calls (deps.py): one line instead.
        check_import(top, self.source.label, self._executing[-1] if self._executing else None)
        if top != "sglang" and not stands_in_for_third_party(top):
            return None
        rel = None
        if top == "sglang" and name != "sglang":
            base = name[len("sglang.") :].replace(".", "/")
            rel = next((c for c in (f"{base}.py", f"{base}/__init__.py") if self.source.has(c)), None)
        is_package = rel is None or rel.endswith("__init__.py")
        return importlib.machinery.ModuleSpec(name, _Loader(self, rel), is_package=is_package)

    def _create(self, name: str, rel: str | None) -> types.ModuleType:
        if rel is None:
            known = self._standins.get(name)
            return known if known is not None else StandIn(name, package=True)
        module = types.ModuleType(name)
        module.__file__ = f"<{self.source.label}>/sglang/{rel}"
        if rel.endswith("__init__.py"):
            module.__path__ = []
        return module

    def _execute(self, module: types.ModuleType, rel: str) -> None:
        text = self.source.read(rel) or ""
        filename = module.__file__ or rel
        try:
            tree = ast.parse(text, filename)
        except SyntaxError as exc:
            raise UpstreamError(f"{self.source.label}: sglang/{rel} does not parse here: {exc}") from None
        # Tracebacks and symptoms quote upstream's lines (an mtime of None: never rechecked).
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        self._executing.append(rel)
        try:
            self._run(module, rel, tree, filename)
        finally:
            self._executing.pop()
        self.upstream[rel] = module

    def _run(self, module: types.ModuleType, rel: str, tree: ast.Module, filename: str) -> None:
        flags = 0
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                flags |= _future_flags(stmt)
                continue
            code = compile(ast.Module([stmt], type_ignores=[]), filename, "exec", flags, dont_inherit=True)
            try:
                exec(code, module.__dict__)
            except MissingDependency:
                raise
            except ModuleNotFoundError as exc:  # a required package whose import fails
                check_import((exc.name or "").partition(".")[0], self.source.label, rel, failed=True)
                self._skip(rel, stmt.lineno, exc)
            except (Exception, NoStandIn) as exc:
                self._skip(rel, stmt.lineno, exc)

    def _skip(self, rel: str, line: int, exc: BaseException) -> None:
        text_of = " ".join(str(exc).split())[:200]
        self.skipped.setdefault(rel, []).append((line, f"{type(exc).__name__}: {text_of}"))


class _Loader(importlib.abc.Loader):
    def __init__(self, load: UpstreamLoad, rel: str | None) -> None:
        self.load, self.rel = load, rel

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.load._create(spec.name, self.rel)

    def exec_module(self, module: types.ModuleType) -> None:
        if self.rel is not None:
            self.load._execute(module, self.rel)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, load: UpstreamLoad) -> None:
        self.load = load

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        return self.load._spec(name)


def _ours(name: str) -> bool:
    return name == "sglang" or name.startswith("sglang.")


def _future_flags(stmt: ast.ImportFrom) -> int:
    flags = 0
    for alias in stmt.names:
        feature = getattr(__future__, alias.name, None)
        flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _definition_line(text: str, name: str) -> int:
    match = re.search(rf"^(?:class|def|async def)\s+{name}\b", text, re.M)
    return text.count("\n", 0, match.start()) + 1 if match else 0
