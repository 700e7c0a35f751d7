"""Variants: modules that provide the component classes the scenarios drive.

A variant is any importable module exposing some of `KVManager`, `KVReceiver`,
`BootstrapServer` and `DPDispatcher` (the protocol is in README.md, "The variant
protocol"). The shipped ones are `reference.buggy` (expected verdict `bug`),
`reference.fixed` (upstream's fixes: `ok` on the four upstream-fix lessons, `bug` on the
residual lessons those fixes leave open) and `reference.hardened` (`ok` everywhere). A
module given with `--impl` is expected `ok` everywhere: the residual lessons are holes
a complete fix closes, so a module with upstream's fixes only reads `bug !` there.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Literal

from reference.protocol import missing_members

# latent: upstream versions only; unknown: an upstream version without the lesson's component
Expected = Literal["bug", "ok", "latent", "unknown"]

# Lessons about holes upstream's four fixes leave open (reference/hardened closes them).
RESIDUAL_LESSON_IDS = (
    "restart-recovery",
    "room-reuse",
    "failure-records",
    "supervised-loops",
    "stale-tracker",
    "late-kv-write",
    "bootstrap-partition",
)

SHIPPED: dict[str, tuple[str, Expected]] = {
    "buggy": ("reference.buggy", "bug"),
    "fixed": ("reference.fixed", "ok"),
    "hardened": ("reference.hardened", "ok"),
}
# Per-lesson expectations that differ from a shipped variant's default.
SHIPPED_EXPECTATIONS: dict[str, dict[str, Expected]] = {"fixed": dict.fromkeys(RESIDUAL_LESSON_IDS, "bug")}


class VariantError(Exception):
    """A variant module could not be loaded; the message is one line for the user."""


@dataclass(frozen=True)
class Variant:
    name: str
    module: ModuleType
    expected: Expected
    # Per-lesson expectations that differ from `expected` (an upstream version that
    # has some fixes and not others).
    expectations: Mapping[str, Expected] = field(default_factory=dict)
    flag: str = ""  # how the command line names it, where its name does not (`--sglang PATH`)

    def expected_for(self, lesson_id: str) -> Expected:
        return self.expectations.get(lesson_id, self.expected)

    def missing(self, names: tuple[str, ...]) -> list[str]:
        """Needed classes, methods and properties the module lacks (see reference/protocol.py)."""
        return missing_members(self.module, names)

    def declared_unavailable(self, names: tuple[str, ...]) -> dict[str, str]:
        """Those of `names` the module declares unavailable, with its reasons."""
        return declared_unavailable(self.module, names)

    def unavailable(self, names: tuple[str, ...]) -> str | None:
        """Why the variant cannot run a lesson needing `names`, in one line; None if it can.

        A module may explain an absent component in `UNAVAILABLE: dict[name, reason]`
        (the upstream adapter does, e.g. for a version without that component).
        """
        reasons: Mapping[str, str] = getattr(self.module, "UNAVAILABLE", {})
        explained = [reasons[name] for name in names if name in reasons]
        if explained:
            return "; ".join(explained)
        missing = self.missing(names)
        return f"variant lacks {', '.join(missing)}" if missing else None


def declared_unavailable(module: ModuleType, names: tuple[str, ...]) -> dict[str, str]:
    """`{name: reason}` for those of `names` in the module's `UNAVAILABLE`."""
    reasons: Mapping[str, str] = getattr(module, "UNAVAILABLE", {})
    return {name: reasons[name] for name in names if name in reasons}


def shipped(name: str) -> Variant:
    module_name, expected = SHIPPED[name]
    return Variant(name, importlib.import_module(module_name), expected, SHIPPED_EXPECTATIONS.get(name, {}))


def load_impl(module_name: str) -> Variant:
    """A user's variant: a dotted name importable from the current directory, or a path
    to a `.py` file or a package directory. Expected verdict: `ok` for every lesson."""
    try:
        module = _import(module_name)
    except ImportError as exc:
        raise VariantError(f"cannot import --impl module {module_name!r}: {_one_line(exc)}") from None
    except (Exception, SystemExit) as exc:  # the user's module raised while importing
        raise VariantError(f"--impl module {module_name!r} raised on import: {_one_line(exc)}") from None
    return Variant(module_name, module, "ok")


def _import(spec: str) -> ModuleType:
    if spec.endswith(".py") or os.sep in spec:
        return _import_path(Path(spec))
    with _cwd_on_path():  # as `python -m` has it, also under the `pytest` entry point
        return importlib.import_module(spec)


def _import_path(path: Path) -> ModuleType:
    package = path.is_dir()
    file = path / "__init__.py" if package else path
    if not file.is_file():
        raise ImportError(f"no such file: {file}")
    name = path.stem if not package else path.resolve().name
    spec = importlib.util.spec_from_file_location(
        name, file, submodule_search_locations=[str(path)] if package else None
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"not a Python module: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a package's relative imports look it up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@contextmanager
def _cwd_on_path() -> Iterator[None]:
    cwd = os.getcwd()
    added = "" not in sys.path and cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
