"""Named adapter configurations: upstream's decode in a setting other than its defaults.

The `--sglang` run drives upstream's decode as upstream's default server runs it: no
staging buffer (`SGLANG_DISAGG_STAGING_BUFFER`, `EnvBool(False)` in `environ.py`) and a
model without multi-head latent attention (`is_mla_backend=False`, what the scheduler
passes for a Llama-style model). Some code paths of the methods the lessons judge run
only in another setting, which upstream's own server also runs:

- `staging`: `SGLANG_DISAGG_STAGING_BUFFER=1` on a decode whose prefill has another
  attention-TP size (upstream stages the KV of a heterogeneous-TP transfer through a
  ring on the decode: `CommonKVReceiver.init` sets `require_staging`).
  `_register_kv_args` reports the ring in its register frame, `send_metadata` resets the
  receiver's `chunk_staging_infos` and registers the room with the staging context, the
  decode thread answers a prefill rank's `STAGING_REQ` (`_handle_staging_req`), and the
  scheduler registers the request before `send_metadata` and unregisters it at its end
  (`DecodeStagingHandler`). What the adapter stands in for is the ring's GPU memory
  (`StagingBuffer`: a host-side address range; upstream's `StagingAllocator` runs on
  it) and the scheduler's two calls (`manager.py`, `_Staging`);
- `mla`: `is_mla_backend=True`, as upstream's scheduler passes it for an MLA model
  (DeepSeek's): every prefill TP rank holds the same compressed KV, so
  `_setup_bootstrap_infos` marks all target ranks but one as dummies, which get an
  empty metadata frame;
- `deferred_release`: `SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1` (0.5.23): the
  decode holds an aborted room's pages until every prefill rank acknowledges that its
  transfer drained (ABORT_ACK); upstream's prefill manager (`prefill.py`, its own transfer
  worker on an engine stand-in whose transfers fail) never acknowledges a room whose send
  failed unsettled, until a new request reuses the room's id;
- `prefill_complete`: `--disaggregation-decode-allocation-policy prefill_complete`
  (0.5.23): the decode reserves KV only once the prefill's forward is done. The decode's
  manager is built under that policy (`defer_decode_allocation`: a cleared receiver no
  longer owns its room, its late `abort()` leaves the room alone), and the configuration
  also offers upstream's prefill-side manager and sender (`prefill.py`), whose
  rendezvous table `update_status` tells the decode of a failed room through.

A configuration is offered for a release only where that release has the code it
drives (`offered`): `prefill_complete` and `deferred_release` also need mooncake's sender
to leave every method the prefill-side checks drive to `CommonKVSender`, which the
adapter runs in its place (`prefill.py`; 0.5.23; 0.5.22's mooncake sender has its own
`send`, `poll` and `abort`, so neither is offered there). Every check that runs in one
names it (`Check.configuration`) and its symptom starts with the configuration's name.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from reference.upstream.loader import UpstreamLoad
from reference.upstream.standins import DISAGG, Settings


@dataclass(frozen=True)
class Configuration:
    name: str
    staging: bool = False  # SGLANG_DISAGG_STAGING_BUFFER (upstream's default: False)
    mla: bool = False  # is_mla_backend (upstream's scheduler: True for an MLA model)
    # --disaggregation-decode-allocation-policy (upstream's default: "early")
    allocation: str = "early"
    # settings (`envs.X`) other than upstream's defaults, as (name, value) pairs
    env: tuple[tuple[str, Any], ...] = ()
    # the configuration also offers upstream's prefill-side manager (`prefill.py`)
    prefill_side: bool = False
    what: str = ""


DEFAULT = Configuration("default", what="upstream's defaults: no staging buffer, a non-MLA model")
STAGING = Configuration(
    "staging",
    staging=True,
    what="SGLANG_DISAGG_STAGING_BUFFER=1 (the decode's staging ring), heterogeneous TP",
)
MLA = Configuration(
    "mla", mla=True, what="is_mla_backend=True: an MLA model (every prefill rank holds the KV)"
)
PREFILL_COMPLETE = Configuration(
    "prefill_complete",
    allocation="prefill_complete",
    prefill_side=True,
    what="--disaggregation-decode-allocation-policy prefill_complete: the decode reserves KV once the "
    "prefill's forward is done (0.5.23)",
)
DEFERRED_RELEASE = Configuration(
    "deferred_release",
    env=(("SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE", True),),
    prefill_side=True,
    what="SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1: an aborted room's decode pages are held "
    "until the prefill acknowledges that its transfer drained (0.5.23)",
)
NAMED = {c.name: c for c in (STAGING, MLA, PREFILL_COMPLETE, DEFERRED_RELEASE)}


# The first release whose decode staging the adapter drives as the scheduler does: its
# `DecodeStagingHandler` reads the request (`req.kv.cache_protected_len`) and the KV
# buffers (`set_kv_buffer_tensors(..., slot_layer_ids=)`) the way `manager._Staging`
# hands them over. Older releases stage too (0.5.11 has the handler), with other
# fields and frames: not driven.
STAGING_FROM = (0, 5, 19)


def offered(load: UpstreamLoad) -> dict[str, Configuration]:
    """The named configurations this release offers: `mla` on every release
    (`is_mla_backend` in `_setup_bootstrap_infos`), `staging` from 0.5.19 where its
    mooncake decode registers a room with the staging context and handles a
    `STAGING_REQ` (`register_staging_room_bootstrap`, `_handle_staging_req`)."""
    found = {"mla": MLA}
    version = load.source.version
    recent = version is None or _release(version) >= STAGING_FROM
    if recent and load.has("DecodeStagingHandler") and load.has("MooncakeKVManager"):
        manager = load.get("MooncakeKVManager")
        if hasattr(manager, "register_staging_room_bootstrap") and hasattr(manager, "_handle_staging_req"):
            found["staging"] = STAGING
    # Both offer upstream's prefill side, whose sender the adapter runs as `CommonKVSender`.
    sender_is_common = _sender_is_common(load)
    if sender_is_common and _defers_allocation(load):
        found["prefill_complete"] = PREFILL_COMPLETE
    if sender_is_common and _defers_release(load):
        found["deferred_release"] = DEFERRED_RELEASE
    return found


# The sender methods the prefill-side checks drive (`prefill.py`, `configured/failed_resurrect.py`).
SENDER_DRIVEN = ("__init__", "init", "send", "poll", "abort", "mark_prefill_complete", "clear")


def _sender_is_common(load: UpstreamLoad) -> bool:
    """Whether mooncake's sender runs `CommonKVSender`'s own code for every method the
    checks drive, so that the adapter's stand-in (`CommonKVSender`: mooncake's module does
    not load here) is mooncake's sender: it overrides none of them but `send`, and its
    `send` only calls `super().send` (0.5.23). In 0.5.22 mooncake's sender has its own
    `__init__`, `send` (the transfer request; Common's is `pass`), `poll` and `abort`."""
    files = load.where("MooncakeKVSender")
    if not files or not load.has("CommonKVSender"):
        return False
    tree = ast.parse(load.source.read(files[0]) or "")
    sender = next(
        (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "MooncakeKVSender"),
        None,
    )
    if sender is None:
        return False
    methods = {node.name: node for node in sender.body if isinstance(node, ast.FunctionDef)}
    send = methods.get("send")
    if send is not None and not _only_delegates(send):
        return False
    return not (set(methods) - {"send"}) & set(SENDER_DRIVEN)


def _only_delegates(method: ast.FunctionDef) -> bool:
    """`def m(...): super().m(...)` (a docstring aside), and nothing else."""
    body = [
        node
        for node in method.body
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], (ast.Expr, ast.Return)) or body[0].value is None:
        return False
    call = body[0].value
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == method.name
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "super"
    )


def _defers_release(load: UpstreamLoad) -> bool:
    """Whether the release's mooncake prefill holds an aborted room's ABORT_ACK until its
    transfer drained, never acknowledges a room poisoned by an unsettled send, and clears
    that state for a new request of the room (`update_status`, 0.5.23)."""
    if not (load.has("MooncakeKVManager") and load.has("AbortNotification") and load.has("AbortAck")):
        return False
    manager = load.get("MooncakeKVManager")
    return hasattr(manager, "poison_deferred_ack_room") and hasattr(
        manager, "_handle_deferred_abort_notification"
    )


def _defers_allocation(load: UpstreamLoad) -> bool:
    """Whether the release has the `prefill_complete` policy's two sides: the prefill's
    rendezvous table (`DeferredBootstrap`, which `update_status` tells of a failed room)
    and the decode receiver that stops owning its room once cleared."""
    if not (load.has("DeferredBootstrap") and load.has("CommonKVSender") and load.has("CommonKVReceiver")):
        return False
    manager, receiver = load.get("CommonKVManager"), load.get("CommonKVReceiver")
    return hasattr(manager, "_notify_bootstrap") and hasattr(receiver, "_owns_bootstrap_room")


def _release(version: str) -> tuple[int, ...]:
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else (0,)


def settings(configuration: Configuration) -> Settings | None:
    """Upstream's `get_disagg()` in `configuration` (None: upstream's defaults)."""
    if configuration.allocation == DISAGG["disaggregation_decode_allocation_policy"]:
        return None
    return Settings(
        "get_disagg()", {**DISAGG, "disaggregation_decode_allocation_policy": configuration.allocation}
    )
