"""The upstream adapter: upstream sglang's own classes as a variant (`--sglang PATH`).

`load_sglang(PATH)` reads upstream's disaggregation files from an sglang wheel, source
checkout or installation (`source.py`), executes them with stand-ins for the heavy
sglang imports (`loader.py`, `standins.py`; sglang's dependencies are never
installed), gives the loaded `common/conn.py` per-thread stand-ins for its `time`,
`requests`, `asyncio` and `logger` globals (`bound.py`), and wraps each upstream
component in the class the scenarios drive, one adapter per component. Each
adapter's docstring lists exactly which parts are upstream code and which are
adapter code; the methods each fix changed are always upstream's. Nothing from
upstream is copied into this repository.

| component | upstream class | adapter |
|---|---|---|
| `KVManager` | `common/conn.py` `CommonKVManager` | `manager.py` |
| `KVReceiver` | `common/conn.py` `CommonKVReceiver` | `receiver.py` |
| `BootstrapServer` | `common/conn.py` `CommonKVBootstrapServer` | `bootstrap_server.py` |
| `DPDispatcher` | not driven (`NOT_DRIVEN` says why) | |

A component a version lacks, or that the adapter cannot drive yet, is listed in the
variant module's `UNAVAILABLE` with the reason, which a lesson needing it reports as
`unknown` (lesson `task-refs` reports that probe as not driven and decides from the
other, see `Lesson.probes`).

Expectations come from upstream's release history (UPSTREAM.md §1): a lesson is
expected `bug` on versions before its fix and `ok` from the version that has it. A
source checkout without a version file is assumed to be recent (every fix in).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from pathlib import Path

from reference.upstream import bound
from reference.upstream.bootstrap_server import server_class
from reference.upstream.errors import NoStandIn, UpstreamError
from reference.upstream.loader import UpstreamLoad
from reference.upstream.manager import manager_class
from reference.upstream.receiver import receiver_class
from reference.upstream.source import UpstreamSource, open_source
from reference.variants import Expected, Variant

# lesson -> first sglang release with its upstream fix (UPSTREAM.md §1).
FIRST_FIXED = {
    "failed-resurrect": "0.5.12",
    "stale-bootstrap": "0.5.19",
    "live-set-race": "0.5.19",
    "task-refs": "0.5.19",
}

# component -> why the adapter does not drive it.
NOT_DRIVEN: dict[str, str] = {
    "DPDispatcher": "the adapter does not load its module (encode_server.py; encoder/runtime.py from "
    "0.5.19), the encoder's HTTP server: a FastAPI app built on import, torch, transformers, the model "
    "loader, ZMQ IPC sockets and spawned workers, no cheap stand-in",
}

# A builder makes one component's adapter class from the loaded version and says which
# members that version cannot drive ({"KVManager._handle_node_failure": reason}); it
# raises UpstreamError with the reason when the version cannot provide it at all.
Built = tuple[type, dict[str, str]]
Builder = Callable[[UpstreamLoad], Built]


def _build_receiver(load: UpstreamLoad) -> Built:
    return receiver_class(load), {}


def _build_server(load: UpstreamLoad) -> Built:
    return server_class(load.get("CommonKVBootstrapServer"), load.source.label), {}


BUILDERS: dict[str, Builder] = {
    "KVManager": manager_class,
    "KVReceiver": _build_receiver,
    "BootstrapServer": _build_server,
}

_CACHE: dict[tuple[str, float, int], types.ModuleType] = {}


def load_sglang(path: str) -> Variant:
    """The variant for the sglang at PATH; raises `UpstreamError` with one line."""
    source = open_source(path)
    module = _variant_module(source, Path(path))
    return Variant(source.label, module, "ok", expectations(source.version))


def _variant_module(source: UpstreamSource, path: Path) -> types.ModuleType:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime, stat.st_size)
    if key not in _CACHE:
        _CACHE[key] = _build(source)
    return _CACHE[key]


def _build(source: UpstreamSource) -> types.ModuleType:
    load = UpstreamLoad(source)
    module = types.ModuleType(f"reference.upstream[{source.label}]")
    unavailable = dict(NOT_DRIVEN)
    for component, builder in BUILDERS.items():
        try:
            cls, gaps = builder(load)
        except (UpstreamError, NoStandIn) as exc:
            unavailable[component] = (
                str(exc) if str(exc).startswith(("not present", source.label)) else (f"{source.label}: {exc}")
            )
            continue
        except Exception as exc:  # an upstream change the adapter does not know yet
            unavailable[component] = f"{source.label}: no {component} adapter: {type(exc).__name__}: {exc}"
            continue
        setattr(module, component, cls)
        unavailable.pop(component, None)
        unavailable.update({member: f"{source.label}: {why}" for member, why in gaps.items()})
    for loaded in load.upstream.values():
        bound.install(loaded)
    module.UNAVAILABLE = unavailable  # type: ignore[attr-defined]
    module.SOURCE = source  # type: ignore[attr-defined]
    module.LOAD = load  # type: ignore[attr-defined]
    return module


def expectations(version: str | None) -> dict[str, Expected]:
    """lesson -> expected verdict for an upstream version (None: a recent checkout)."""
    if version is None:
        return dict.fromkeys(FIRST_FIXED, "ok")
    have = _release(version)
    return {lesson: _verdict(have >= _release(first)) for lesson, first in FIRST_FIXED.items()}


def _verdict(fixed: bool) -> Expected:
    return "ok" if fixed else "bug"


def _release(version: str) -> tuple[int, ...]:
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else (0,)


__all__ = ["FIRST_FIXED", "UpstreamError", "expectations", "load_sglang"]
