"""Execute upstream module files under their own names, with stand-ins, in a scope.

Upstream's files import each other by absolute name (`from sglang.srt.disaggregation.
base.conn import KVPoll`), so while one version loads, `sys.modules` must map those
names to that version's modules and to the stand-ins. We install them for the load
only and restore `sys.modules` afterwards: several versions can be loaded into one
process (the fidelity tests load three), and a real sglang installed in the same
environment is never shadowed outside the load. The loaded module objects live on in
the adapter, which holds them; their globals keep their own imports.
"""

from __future__ import annotations

import logging
import sys
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from reference.upstream.errors import NoStandIn, UpstreamError
from reference.upstream.source import UpstreamSource
from reference.upstream.standins import sglang_standins, third_party_standins

# Upstream logs an error per prefill failure; keep that off the CLI's stderr unless the
# user configured logging (a NullHandler stops Python's last-resort stderr handler).
logging.getLogger("sglang").addHandler(logging.NullHandler())


def module_name(relpath: str) -> str:
    """`srt/disaggregation/common/conn.py` -> `sglang.srt.disaggregation.common.conn`."""
    return "sglang." + relpath.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def load_files(
    source: UpstreamSource, relpaths: list[str], loaded: Mapping[str, types.ModuleType] | None = None
) -> dict[str, types.ModuleType]:
    """Execute `relpaths` (in order) of `source`; return {relpath: module}.

    `loaded` are modules of the same version loaded earlier (e.g. base/conn.py for the
    dispatcher's module), put back under their names for this load.
    """
    done: dict[str, types.ModuleType] = dict(loaded or {})
    scope = {**sglang_standins(), **third_party_standins()}
    scope.update({module_name(rel): mod for rel, mod in done.items()})
    with _installed(scope, [module_name(rel) for rel in relpaths]):
        for relpath in relpaths:
            text = source.read(relpath)
            if text is None:
                raise UpstreamError(f"{source.label} has no sglang/{relpath}")
            done[relpath] = _execute(source, relpath, text)
    return {rel: done[rel] for rel in relpaths}


def _execute(source: UpstreamSource, relpath: str, text: str) -> types.ModuleType:
    name = module_name(relpath)
    module = types.ModuleType(name)
    module.__file__ = f"<{source.label}>/sglang/{relpath}"
    module.__package__ = name.rpartition(".")[0]
    sys.modules[name] = module
    parent = sys.modules.get(module.__package__)
    if parent is not None:
        setattr(parent, name.rpartition(".")[2], module)
    try:
        exec(compile(text, module.__file__, "exec"), module.__dict__)
    except (ImportError, NoStandIn) as exc:
        raise UpstreamError(f"{source.label}: loading sglang/{relpath} failed: {exc}") from None
    except Exception as exc:
        raise UpstreamError(
            f"{source.label}: sglang/{relpath} raised {type(exc).__name__} on load: {exc}"
        ) from None
    return module


@contextmanager
def _installed(scope: dict[str, types.ModuleType], written: list[str]) -> Iterator[None]:
    """Install `scope`; afterwards restore every name in it or in `written`."""
    saved = {name: sys.modules.get(name) for name in [*scope, *written]}
    before = set(sys.modules)
    sys.modules.update(scope)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
        for name in set(sys.modules) - before:
            if name == "sglang" or name.startswith("sglang."):
                sys.modules.pop(name, None)  # upstream modules of this load
