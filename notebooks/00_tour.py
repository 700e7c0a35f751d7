# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tour: one request's life in PD disaggregation
#
# Start here. In prefill/decode (PD) disaggregation, one group of GPUs (the **prefill**
# instance) runs the prompt through the model and produces its KV cache; another (the
# **decode** instance) generates the tokens, after the KV cache has been copied into its own
# memory. The control plane that arranges that copy is what the four lessons are about. This
# notebook walks one request through it, step by step, on the real reference components
# (`reference/`) and the in-process mock transport, then draws who talks to whom and the
# messages that actually flowed.
#
# Names follow upstream sglang (`python/sglang/srt/disaggregation/`): a request is identified by
# its `bootstrap_room`; a prefill instance is found through its `bootstrap_addr`, the
# `host:port` of its **bootstrap server**.

# %%
import reference.fixed
from reference.teaching import plots, tour
from reference.teaching.display import show

walk = tour.Tour(reference.fixed)

# %% [markdown]
# ## Who talks to whom
#
# - The **decode scheduler** creates one **KVReceiver** per request, then polls it.
# - The decode's **KVManager** keeps the status of every room (`request_status`), a cache of
#   where each prefill rank listens (`connection_pool`), and which rooms wait on which prefill
#   (`addr_to_rooms_tracker`); its **heartbeat thread** probes each prefill's `/health`.
# - The prefill's **bootstrap server** is a small HTTP route table: each prefill rank registers
#   its ZMQ PULL port there (`PUT /route`), and decode receivers look the ports up
#   (`GET /route`).
# - Messages to a prefill rank go over ZMQ PUSH sockets; the KV bytes go over the data plane
#   (RDMA with Mooncake or NIXL upstream; a memcpy here), and each rank then reports a status to
#   the decode's PULL socket (its **inbox**).
#
# Each arrow's label starts with the numbers of the steps below that send it. Step 2 (the decode
# rank starting: its PULL socket bound, its KV memory registered) sends no message, so no arrow
# carries a 2.

# %%
show(plots.topology_picture(tour.TOPOLOGY))

# %% [markdown]
# ## Step 1. The prefill instance starts
#
# Its bootstrap server comes up at a fixed address, and each of its two TP ranks binds a PULL
# socket on a random port and registers it with `PUT /route`. (The mock prefill calls the same
# route logic, `BootstrapTable.handle`, that the aiohttp server wraps on loopback.)

# %%
print(walk.start_prefill())

# %% [markdown]
# ## Step 2. The decode rank starts
#
# Its KV manager binds its own PULL socket, where prefill ranks will report, and registers the
# KV memory that prefill ranks will write into.

# %%
print(walk.start_decode())

# %% [markdown]
# ## Step 3. The decode learns the prefill's layout
#
# Before the first request to a prefill, `try_ensure_parallel_info` asks its bootstrap server
# for the whole layout at once (`GET /route` with every rank set to -1), checks that page size
# and KV dtype match its own, and caches the answer in `prefill_info_table`. From now on the
# heartbeat watches this address.

# %%
print(walk.fetch_parallel_info())

# %% [markdown]
# ## Step 4. The heartbeat probes the prefill
#
# Every 5 s (`SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL`) the heartbeat thread sends
# `GET /health` to every prefill it knows; after 2 misses in a row it calls
# `_handle_node_failure`, which fails every room waiting on that prefill (lesson 2,
# `live-set-race`, is about that function). The clock here is virtual: 5 s pass instantly.

# %%
print(walk.start_heartbeat())

# %% [markdown]
# ## Step 5. A request arrives: its receiver opens the room
#
# The constructor tracks the room under the prefill's address and sets its status to
# Bootstrapping. (Statuses are ordered: Failed 0 < Bootstrapping 1 < WaitingForInput 2 <
# Transferring 3 < Success 4; lesson 1, `failed-resurrect`, is about how they are written.)

# %%
print(walk.open_request())

# %% [markdown]
# ## Step 6. `init()`: find the prefill ranks and register with them
#
# The receiver works out which prefill ranks hold its KV (here both TP ranks), looks their
# ports up in `connection_pool` or, on a miss, asks `GET /route` once per rank and caches the
# list under the key `"{addr}_{dp}_{cp}_{tp}"`. On a miss it also registers this decode's KV
# memory with each rank (`REGISTER`). Status: WaitingForInput. (Lesson 3, `stale-bootstrap`,
# is about what happens to that cache when the prefill restarts.)

# %%
print(walk.init_receiver())

# %% [markdown]
# ## Step 7. `send_metadata()`: tell each rank where to write
#
# One `METADATA` message per rank: the room and the decode pages to fill. Each rank writes its
# KV pages into the decode's memory and pushes `STATUS [room, Success, rank]` to the decode's
# inbox; once every required rank has reported, the manager sets the room to Success. (On the
# mock transport all of this happens synchronously inside the call.)

# %%
print(walk.send_metadata())

# %% [markdown]
# ## Step 8. The scheduler polls, and the bytes are checked
#
# `poll()` latches the final status. Here we also compare the bytes in decode memory with the
# pages each prefill rank sent.

# %%
print(walk.poll())

# %% [markdown]
# ## Step 9. `clear()`: the room is forgotten
#
# The receiver removes the room from the status table. A second request to the same prefill
# would now find the ranks in `connection_pool` and skip `GET /route` and `REGISTER` entirely.

# %%
print(walk.clear())
walk.close()

# %% [markdown]
# ## The messages that flowed, in order
#
# Every message above was recorded as it crossed the mock network (repeats merged):

# %%
show(plots.sequence_picture(walk.sequence()))

# %% [markdown]
# ## Where the four lessons sit in this picture
#
# - `01_failed_resurrect`, step 9 and any late `abort()` after it: a Failed written after
#   `clear()` brings the room back, for good.
# - `02_live_set_race`, step 4 when a prefill dies: the heartbeat thread dies mid-failure, and
#   later failures go unnoticed.
# - `03_stale_bootstrap`, step 6 after a prefill restart: the cached ports are stale, and every
#   request fails until the decode itself restarts.
# - `04_task_refs`, the bootstrap server's cleanup task and the DP dispatcher's loops: a
#   background task held only weakly is destroyed by the garbage collector.
#
# `05_benchmarks` then looks at what the fixes cost.
