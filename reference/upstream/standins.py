"""Stand-in modules for the heavy sglang imports of upstream's disaggregation files.

Upstream `common/conn.py` imports server args, runtime context, distributed groups,
dp-attention helpers, env settings and network utilities from the rest of sglang,
whose import chain pulls in torch, transformers and about 85 packages. The code the
lessons drive touches almost none of it, so, as upstream's own
`test_common_kv_manager_socket_cache.py` does, we load the files with small stand-ins
in `sys.modules` instead. Everything here is adapter code written for this repository:
a single-rank, single-node decode with upstream's documented defaults.

A name a stand-in does not define still imports (a later version may import more),
but using it raises `NoStandIn` naming it, which a scenario reports as `unknown`.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Callable
from typing import Any

from reference.upstream.bound import current
from reference.upstream.errors import NoStandIn

# Upstream's defaults of the SGLANG_DISAGGREGATION_* settings the loaded code reads.
ENV_DEFAULTS: dict[str, Any] = {
    "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL": 5.0,
    "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": 2,
    "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": 300,
    "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": 300,
    "SGLANG_DISAGGREGATION_BOOTSTRAP_ENTRY_CLEANUP_INTERVAL": 120,
    "SGLANG_DISAGGREGATION_ZMQ_SEND_TIMEOUT": 1,
    "SGLANG_DISAGGREGATION_ZMQ_MAX_SOCKETS": 16384,
    "SGLANG_DISAGGREGATION_QUEUE_SIZE": 4,
    "SGLANG_DISAGGREGATION_FORCE_QUERY_PREFILL_DP_RANK": False,
    "SGLANG_DISAGGREGATION_ALL_CP_RANKS_TRANSFER": False,
    "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE": None,
    "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE": False,
    "SGLANG_RUST_SERVER": False,  # a prefill's registration: the Python HTTP server's PUT /route
    "SGLANG_ENCODER_REQ_TIMEOUT": 180,
    "SGLANG_ENCODER_SEND_TIMEOUT": 180,
}

# One decode rank: no tensor, context, data or pipeline parallelism.
PARALLEL: dict[str, Any] = {
    "attn_tp_size": 1, "attn_tp_rank": 0, "attn_cp_size": 1, "attn_cp_rank": 0,
    "attn_dcp_size": 1, "attn_dcp_rank": 0, "enable_dp_attention": False, "dp_size": 1,
    "pp_size": 1, "nnodes": 1, "dist_init_addr": None, "load_balance_method": "round_robin",
    "enable_dsa_cache_layer_split": False, "attn_dp_size": 1, "attn_dp_rank": 0, "num_dp_ranks": 1,
    "enable_cp_tp_group_sharing": False, "enable_kv_cache_sharding": False, "moe_dp_size": 1, "dcp_size": 1,
    "pp_group": None,  # a prefill's pipeline group: read only when pp_size > 1
}  # fmt: skip
SERVING: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 30000,
    "kv_cache_dtype": "auto",
    "page_size": 1,
    "enable_hisparse": False,
}
DISAGG: dict[str, Any] = {
    "disaggregation_bootstrap_port": 8998,
    "disaggregation_decode_allocation_policy": "early",
}


class Settings:
    """A read-only bag of settings; an unknown one raises `NoStandIn` naming it."""

    def __init__(self, owner: str, values: dict[str, Any]) -> None:
        self._owner = owner
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NoStandIn(f"no stand-in for {self._owner}.{name}")


class ServerArgs(Settings):
    def __init__(self) -> None:
        # A prefill's bootstrap loop asks whether PD role switching is on (upstream's default: off).
        super().__init__("ServerArgs", {**PARALLEL, **SERVING, **DISAGG, "enable_pd_role_switch": False})


class _EnvVar:
    def __init__(self, name: str) -> None:
        self.name = name

    def get(self) -> Any:
        bound_env = current().env  # a configuration's setting, where one is bound
        if bound_env is not None and self.name in bound_env:
            return bound_env[self.name]
        if self.name not in ENV_DEFAULTS:
            raise NoStandIn(f"no stand-in default for envs.{self.name}")
        return ENV_DEFAULTS[self.name]


class _Envs:
    def __getattr__(self, name: str) -> _EnvVar:
        if name.startswith("__"):
            raise AttributeError(name)
        return _EnvVar(name)


class NetworkAddress:
    """host:port with the conversions upstream's callers use (IPv6 in brackets)."""

    def __init__(self, host: str, port: int | None = None) -> None:
        self.host, self.port = host.strip("[]"), port

    @classmethod
    def parse(cls, text: str) -> NetworkAddress:
        host, _, port = text.rpartition(":")
        return cls(host, int(port)) if host else cls(text)

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.host

    def resolved(self) -> NetworkAddress:
        return self

    def _hostport(self) -> str:
        host = f"[{self.host}]" if self.is_ipv6 else self.host
        return host if self.port is None else f"{host}:{self.port}"

    def to_tcp(self) -> str:
        return f"tcp://{self._hostport()}"

    def to_url(self) -> str:
        return f"http://{self._hostport()}"

    def to_host_port_str(self) -> str:
        return self._hostport()

    def __str__(self) -> str:
        return self._hostport()


def _unusable(qualname: str) -> type:
    """A placeholder for an imported name without a stand-in: a class that can be
    subclassed or named in annotations, and raises `NoStandIn` when called."""

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise NoStandIn(f"no stand-in for {qualname}")

    return type(qualname.rpartition(".")[2], (), {"__new__": refuse})


class StandIn(types.ModuleType):
    """A module with the given names; any other public name is `_unusable`."""

    def __init__(self, name: str, package: bool = False, **names: Any) -> None:
        super().__init__(name, "stand-in module of the reference suite's upstream adapter")
        if package:
            self.__path__: list[str] = []
        self.__dict__.update(names)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        placeholder = _unusable(f"{self.__name__}.{name}")
        setattr(self, name, placeholder)
        return placeholder


def _size_or_rank(module: str) -> Callable[[str], Any]:
    """dp-attention helpers: a single rank, so every size is 1 and every rank 0."""

    def lookup(name: str) -> Any:
        if name.startswith("get_") and name.endswith("_size"):
            return lambda: 1
        if name.startswith("get_") and name.endswith("_rank"):
            return lambda: 0
        return _unusable(f"{module}.{name}")

    return lookup


class _RankHelpers(StandIn):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _size_or_rank(self.__name__)(name)


class _NoTrace:
    """sglang's `TraceNullContext` (tracing off, upstream's default): every call does nothing."""

    tracing_enable = False

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *_args, **_kwargs: None


def sglang_standins() -> dict[str, types.ModuleType]:
    """Fresh stand-ins for one load (each loaded version gets its own). Any other
    `sglang.*` module outside the disaggregation package is an empty `StandIn`."""
    srt = "sglang.srt"
    parallel, serving, disagg = (
        Settings("get_parallel()", PARALLEL),
        Settings("get_serving()", SERVING),
        Settings("get_disagg()", DISAGG),
    )
    # upstream's defaults: no tracing, no speculative decoding, no unified memory pool
    observability = Settings("get_observability()", {"enable_trace": False})
    spec = Settings("get_spec()", {"speculative_algorithm": None})
    memory = Settings("get_memory()", {"enable_unified_memory": False})
    modules = [
        StandIn(f"{srt}.server_args", package=True, ServerArgs=ServerArgs),
        StandIn(f"{srt}.environ", package=True, envs=_Envs()),
        _RankHelpers(f"{srt}.layers.dp_attention", package=True),
        StandIn(
            f"{srt}.runtime_context",
            package=True,
            get_parallel=lambda: parallel,
            get_serving=lambda: serving,
            get_disagg=lambda: current().disagg or disagg,  # a configuration's, where one is bound
            get_observability=lambda: observability,
            get_spec=lambda: spec,
            get_memory=lambda: memory,
            linear_attn_tp_size=lambda *_a, **_k: 1,
        ),
        StandIn(
            f"{srt}.utils.network",
            package=True,
            NetworkAddress=NetworkAddress,
            get_local_ip_auto=lambda *_a, **_k: "127.0.0.1",
            # The manager's PULL socket is not bound: the adapter's decode inbox receives.
            get_zmq_socket_on_host=lambda *_a, **_k: (0, None),
        ),
        # A prefill's sender (configs.py, `prefill_complete`) makes a trace context: tracing off.
        StandIn(f"{srt}.observability.trace", package=True, TraceNullContext=_NoTrace),
    ]
    torch_distributed = StandIn("torch.distributed", is_available=lambda: False, is_initialized=lambda: False)
    modules += [StandIn("torch", package=True, distributed=torch_distributed), torch_distributed]
    return {module.__name__: module for module in modules}


# Third-party packages never imported for upstream's files even when installed: their
# import costs seconds and the code the lessons drive does not use them.
HEAVY = frozenset({"torch", "torchvision", "transformers", "triton", "vllm", "flashinfer"})


def stands_in_for_third_party(top: str) -> bool:
    """Whether upstream's `import top` gets a stand-in: a heavy package (torch only while
    the process has not imported it already) or one that is not installed here."""
    if top in sys.modules:
        return isinstance(sys.modules[top], StandIn)
    if top in HEAVY:
        return True
    return importlib.machinery.PathFinder.find_spec(top) is None and top not in sys.builtin_module_names
