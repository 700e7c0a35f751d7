"""Variants: modules that provide the component classes the scenarios drive.

A variant is any importable module exposing some of `KVManager`, `KVReceiver`,
`BootstrapServer` and `DPDispatcher` (the protocol is in README.md, "The variant
protocol"). The shipped ones are `reference.buggy` (expected verdict `bug`) and
`reference.fixed` (expected `ok`); a module given with `--impl` is expected `ok`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

Expected = Literal["bug", "ok"]

SHIPPED: dict[str, tuple[str, Expected]] = {
    "buggy": ("reference.buggy", "bug"),
    "fixed": ("reference.fixed", "ok"),
}


class VariantError(Exception):
    """A variant module could not be loaded; the message is one line for the user."""


@dataclass(frozen=True)
class Variant:
    name: str
    module: ModuleType
    expected: Expected

    def missing(self, names: tuple[str, ...]) -> list[str]:
        return [name for name in names if not hasattr(self.module, name)]


def shipped(name: str) -> Variant:
    module_name, expected = SHIPPED[name]
    return Variant(name, importlib.import_module(module_name), expected)


def load_impl(module_name: str) -> Variant:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise VariantError(f"cannot import --impl module {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module raised while importing
        raise VariantError(
            f"--impl module {module_name!r} raised on import: {type(exc).__name__}: {exc}"
        ) from None
    return Variant(module_name, module, "ok")
