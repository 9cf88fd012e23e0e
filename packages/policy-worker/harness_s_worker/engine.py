"""Continuous batching for `sample`, with each episode's KV cache kept between turns.

Invariants:
- One scheduler thread owns every running sequence. At each decoding step it runs one adapter's
  batch (adapters take turns), so one forward pass never mixes two policies' weights.
- Sequences join a batch when they arrive (pre-filled alone, from their episode's cached prefix
  where there is one) and leave it the step they finish; no sequence waits for another to end.
- A finished turn's cache is kept under the episode's key within `cache_bytes`; the least
  recently used is evicted first, and an evicted episode is pre-filled again from its ids (slower,
  never an error). A cache is only reused when the ids it covers are a prefix of the new ones.
- What is sampled is what is reported: the log-probability of each token is taken from the very
  distribution it was drawn from (temperature and top-p applied identically; nothing else — a
  model's generation-config processors are never applied, on any path).
- Every forward pass holds `model_lock`, so an update's micro-batches interleave with decoding
  steps instead of waiting for them (and the other way round).
"""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from .sampling import SamplingRule, draw

ADMIT_WAIT_STEPS = 8
# Into an idle batch, requests are gathered while they keep arriving (a pause of GATHER_PAUSE_S,
# at most GATHER_MAX_S), so the episodes of one training step start, and end, together.
GATHER_PAUSE_S = 0.002
GATHER_MAX_S = 0.025


@dataclass
class Request:
    adapter: str
    key: str
    ids: list[int]
    rule: SamplingRule
    max_tokens: int
    eos_ids: frozenset[int]
    seed: int | None = None
    future: Future[Any] = field(default_factory=Future[Any])
    queued_at: int = 0  # the engine's step count when it was submitted
    arrived: float = 0.0  # time.monotonic() when it was submitted
    # Called on the scheduler thread just before the sequence starts; raising refuses it.
    admit: object = None
    # The tokens allowed after the completion so far (a bool row over the vocabulary), or None.
    constraint: Callable[[list[int]], torch.Tensor] | None = None


@dataclass
class Running:
    req: Request
    generator: random.Random
    length: int  # true tokens in the cache
    next_id: int
    out_ids: list[int] = field(default_factory=list)
    out_logprobs: list[float] = field(default_factory=list)
    # Device time attributed to this sequence: each forward pass's time split evenly over its rows.
    device_s: float = 0.0


# From this many cached positions a running batch writes each step's keys and values in place
# into buffers with spare room (measured: half the step time at 1.3k positions × 48 sequences on
# CPU); below it, a plain cache that concatenates is as fast (attention reads contiguous tensors).
#: A cache as per-layer (keys, values) pairs.
Layers = list[tuple[torch.Tensor, torch.Tensor]]
# New ids from which a CPU pre-fill runs one pass per prompt shape rather than one padded pass.
PER_SHAPE_FROM = 512

GROW_FROM = 512


class GrowingLayer(DynamicLayer):
    """A cache layer whose keys and values live in a buffer with room to grow (doubling when
    full): a decoding step writes its own column instead of copying the whole cache."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int = 128) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self.length = keys.shape[2]
        shape = (*keys.shape[:2], self.length + room, keys.shape[3])
        self.kbuf, self.vbuf = keys.new_empty(shape), values.new_empty(shape)
        self.kbuf[:, :, : self.length], self.vbuf[:, :, : self.length] = keys, values
        self.keys, self.values = self.kbuf[:, :, : self.length], self.vbuf[:, :, : self.length]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        end = self.length + key_states.shape[2]
        if end > self.kbuf.shape[2]:
            grow = max(end, 2 * self.kbuf.shape[2]) - self.kbuf.shape[2]
            self.kbuf, self.vbuf = pad_right(self.kbuf, grow), pad_right(self.vbuf, grow)
        self.kbuf[:, :, self.length : end], self.vbuf[:, :, self.length : end] = key_states, value_states
        self.length = end
        self.keys, self.values = self.kbuf[:, :, :end], self.vbuf[:, :, :end]
        return self.keys, self.values


def running_cache(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    """The cache a running batch decodes on: growing buffers for long contexts, else plain."""
    if not layers or layers[0][0].shape[2] < GROW_FROM:
        return cache_from(layers)
    cache = DynamicCache()
    cache.layers = [GrowingLayer(k, v) for k, v in layers]
    return cache


def layers_of(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [
        (cast(torch.Tensor, layer.keys), cast(torch.Tensor, layer.values))
        for layer in cast(list[DynamicLayer], cache.layers)
    ]


def cache_from(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    """A cache holding these keys and values as they are (not copied: a DynamicCache built by
    `update` would concatenate them onto an empty tensor first)."""
    cache = DynamicCache()
    cache.layers = []
    for k, v in layers:
        layer = DynamicLayer()
        layer.dtype, layer.device, layer.is_initialized = k.dtype, k.device, True
        layer.keys, layer.values = k, v
        cache.layers.append(layer)
    return cache


class KvStore:
    """Per-episode caches (keys and values of each layer, batch 1) by episode key, LRU within a byte budget."""

    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self.used = 0
        self.entries: OrderedDict[str, tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]], int]] = OrderedDict()
        self.hits = self.misses = self.evictions = 0

    @staticmethod
    def size(layers: Layers) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)

    def take(self, key: str, ids: list[int]) -> tuple[Layers | None, int]:
        """(layers, tokens covered) when the stored ids are a proper prefix of `ids`; removed from the store."""
        entry = self.entries.pop(key, None)
        if entry is None:
            self.misses += 1
            return None, 0
        stored, layers, size = entry
        self.used -= size
        if len(stored) >= len(ids) or ids[: len(stored)] != stored:
            self.misses += 1
            return None, 0
        self.hits += 1
        return layers, len(stored)

    def put(self, key: str, ids: list[int], layers: Layers) -> None:
        size = self.size(layers)
        if size > self.budget:
            return
        while self.used + size > self.budget and self.entries:
            _, (_, _, dropped) = self.entries.popitem(last=False)
            self.used -= dropped
            self.evictions += 1
        self.entries[key] = (ids, layers, size)
        self.used += size

    def drop(self, prefix: str) -> None:
        for key in [k for k in self.entries if k.startswith(prefix)]:
            self.drop_key(key)

    def drop_key(self, key: str) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None:
            self.used -= entry[2]


class Engine:
    """The scheduler: `submit` a request, get a Future of (ids, logprobs, finish_reason, device_seconds)."""

    def __init__(
        self,
        model: Any,
        model_lock: threading.Lock,
        set_adapter: Callable[[str], None],
        cache_bytes: int = 1 << 30,
        max_batch: int = 64,
    ) -> None:
        self.model, self.model_lock, self.set_adapter = model, model_lock, set_adapter
        self.kv = KvStore(cache_bytes)
        self.max_batch = max_batch
        self.pending: OrderedDict[str, list[Request]] = OrderedDict()
        self.batches: dict[str, dict[str, Any]] = {}
        self.barriers: dict[str, list[tuple[Callable[[], Any], Future[Any]]]] = {}
        self.cond = threading.Condition()
        self.steps = self.prefills = self.prefilled_rows = 0
        self.tokens_sampled = 0  # every token drawn, a cancelled row's too (/healthz: the worker's tokens/s)
        self.thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self.thread.start()

    def submit(self, req: Request) -> Future[Any]:
        with self.cond:
            req.queued_at, req.arrived = self.steps, time.monotonic()
            self.pending.setdefault(req.adapter, []).append(req)
            self.cond.notify()
        return req.future

    def barrier(self, adapter: str, fn: Callable[[], Any]) -> Future[Any]:
        """Runs `fn` on the scheduler thread once no sequence of `adapter` is running; none is
        admitted meanwhile (a publish or a delete never lands in the middle of a turn)."""
        future: Future[Any] = Future()
        with self.cond:
            self.barriers.setdefault(adapter, []).append((fn, future))
            self.cond.notify()
        return future

    def forget_key(self, key: str) -> None:
        with self.cond:
            self.kv.drop_key(key)

    def forget(self, key_prefix: str) -> None:
        with self.cond:
            self.kv.drop(key_prefix)

    def _loop(self) -> None:
        turn = 0
        while True:
            with self.cond:
                while not self.batches and not any(self.pending.values()) and not self.barriers:
                    self.cond.wait()
                due = [self.barriers.pop(a) for a in list(self.barriers) if a not in self.batches]
            for items in due:
                for fn, future in items:
                    try:
                        future.set_result(fn())
                    except Exception as err:
                        future.set_exception(err)
            with self.cond:
                adapters = sorted(set(self.batches) | {a for a, q in self.pending.items() if q})
                if not adapters:
                    continue
                adapter = adapters[turn % len(adapters)]
                turn += 1
                running = len(self.batches.get(adapter, {}).get("rows", []))
                queue = self.pending.get(adapter, [])
                pause = self._gathering(running, queue)
                if pause and len(adapters) == 1:
                    self.cond.wait(pause)
                    continue
                room = (
                    0 if adapter in self.barriers or not self._admit_now(running, queue) else self.max_batch - running
                )
                joining, self.pending[adapter] = queue[:room], queue[room:]
            if not joining and adapter not in self.batches:
                continue
            try:
                self._join(adapter, joining)
            except Exception as err:  # their pre-fill failed: these requests fail, nothing else
                for req in joining:
                    if not req.future.done():
                        req.future.set_exception(err)
            try:
                if adapter in self.batches:
                    self._step(adapter)
            except Exception as err:  # a failed forward fails the sequences it held, never the thread
                batch = self.batches.pop(adapter, None)
                for row in batch["rows"] if batch else []:
                    if not row.req.future.done():
                        row.req.future.set_exception(err)

    def _gathering(self, running: int, queue: list[Request]) -> float:
        """Seconds to wait for more arrivals before pre-filling into an idle batch (0: go now)."""
        if running or not queue or len(queue) >= self.max_batch:
            return 0.0
        now = time.monotonic()
        wait = min(GATHER_PAUSE_S - (now - queue[-1].arrived), GATHER_MAX_S - (now - queue[0].arrived))
        return max(wait, 0.0)

    def _admit_now(self, running: int, queue: list[Request]) -> bool:
        """Joiners are pre-filled together: at once into an idle batch; into a running one when a
        quarter of its size is waiting, or when the oldest has waited `ADMIT_WAIT_STEPS` steps
        (each pre-fill is a forward pass of its own, so fewer, larger ones keep decoding fast)."""
        if not queue:
            return False
        if running == 0 or len(queue) >= max(1, running // 4):
            return True
        return self.steps - queue[0].queued_at >= ADMIT_WAIT_STEPS

    def _admitted(self, reqs: list[Request]) -> list[Request]:
        out = []
        for req in reqs:
            if req.future.done():
                continue
            try:
                if callable(req.admit):
                    req.admit()
            except Exception as err:
                req.future.set_exception(err)
                continue
            out.append(req)
        return out

    def _join(self, adapter: str, reqs: list[Request]) -> None:
        """Pre-fills the joining requests in one forward pass: row i is [its cached prefix | the
        ids it adds], each part left-padded, with the padding masked. New episodes with the same
        prompt (a group's rollouts, an evaluation's attempts) are computed once and share it."""
        reqs = self._admitted(reqs)
        if not reqs:
            return
        started = time.perf_counter()
        with self.cond:
            taken = [self.kv.take(r.key, r.ids) for r in reqs]
        unique: list[tuple[Request, list[Any] | None, int]] = []
        index: list[int] = []
        seen: dict[tuple[int, ...], int] = {}
        for r, (layers, c) in zip(reqs, taken, strict=True):
            key = tuple(r.ids) if c == 0 else None
            if key is not None and key in seen:
                index.append(seen[key])
                continue
            if key is not None:
                seen[key] = len(unique)
            index.append(len(unique))
            unique.append((r, layers, c))
        logits, layers, mask = self._prefill_shapes(adapter, unique)
        if len(unique) < len(reqs):
            expand = torch.tensor(index, device=mask.device)
            logits, mask = logits.index_select(0, expand), mask.index_select(0, expand)
            layers = [(k.index_select(0, expand), v.index_select(0, expand)) for k, v in layers]
        generators = [random.Random(r.seed if r.seed is not None else random.getrandbits(63)) for r in reqs]
        logits = constrain(logits, [(r.constraint, []) for r in reqs])
        tokens, logprobs = draw(
            logits, [r.rule for r in reqs], generators
        )  # draw reads the tokens back: the device has finished
        share = (time.perf_counter() - started) / len(reqs)
        rows = [
            Running(r, g, len(r.ids), tokens[i], [tokens[i]], [logprobs[i]], device_s=share)
            for i, (r, g) in enumerate(zip(reqs, generators, strict=True))
        ]
        self.tokens_sampled += len(rows)
        self._merge(adapter, rows, layers, mask)

    def _prefill_shapes(
        self, adapter: str, rows: list[tuple[Request, list[Any] | None, int]]
    ) -> tuple[torch.Tensor, Layers, torch.Tensor]:
        """(last logits, layers, mask) of the rows, in their order. On CPU, past `PER_SHAPE_FROM`
        new ids, one forward pass per shape (cached and new length): a padded row sends attention
        down the masked path, five times the CPU of the causal kernel at 3,000 tokens
        (`scripts/prefill-bench.py`); shorter, or on an accelerator, one pass for all."""
        shapes: dict[tuple[int, int], list[int]] = {}
        for i, (r, _, c) in enumerate(rows):
            shapes.setdefault((len(r.ids), c), []).append(i)
        longest = max(len(r.ids) - c for r, _, c in rows)
        if len(shapes) == 1 or longest < PER_SHAPE_FROM or next(self.model.parameters()).device.type != "cpu":
            out, mask = self._prefill(adapter, rows)
            return out.logits[:, -1].float(), layers_of(out.past_key_values), mask
        parts = []
        for members in shapes.values():
            out, mask = self._prefill(adapter, [rows[i] for i in members])
            parts.append((out.logits[:, -1].float(), layers_of(out.past_key_values), mask))
        logits = torch.cat([part[0] for part in parts])
        layers, mask = stack_left_padded([(part[1], part[2]) for part in parts])
        order = [i for members in shapes.values() for i in members]
        back = torch.tensor(sorted(range(len(order)), key=order.__getitem__), device=mask.device)
        return (
            logits.index_select(0, back),
            [(k.index_select(0, back), v.index_select(0, back)) for k, v in layers],
            mask.index_select(0, back),
        )

    def _prefill(self, adapter: str, rows: list[tuple[Request, list[Any] | None, int]]) -> tuple[Any, torch.Tensor]:
        """One forward pass over each row's new ids after its cached prefix; (output, mask)."""
        dev = next(self.model.parameters()).device
        past_width = max(c for _, _, c in rows)
        new_width = max(len(r.ids) - c for r, _, c in rows)
        ids = torch.zeros(len(rows), new_width, dtype=torch.long, device=dev)
        positions = torch.ones(len(rows), new_width, dtype=torch.long, device=dev)
        mask = torch.zeros(len(rows), past_width + new_width, dtype=torch.long, device=dev)
        for i, (r, _, c) in enumerate(rows):
            n = len(r.ids) - c
            ids[i, new_width - n :] = torch.tensor(r.ids[c:], device=dev)
            positions[i, new_width - n :] = torch.arange(c, len(r.ids), device=dev)
            mask[i, past_width - c : past_width] = 1
            mask[i, past_width + new_width - n :] = 1
        past = []
        if past_width:
            template = next(layers for _, layers, _ in rows if layers)
            for layer, (k0, v0) in enumerate(template):
                shape = (len(rows), k0.shape[1], past_width, k0.shape[3])
                ks, vs = k0.new_zeros(shape), v0.new_zeros(shape)
                for i, (_, layers, c) in enumerate(rows):
                    if layers:
                        ks[i, :, past_width - c :] = layers[layer][0][0]
                        vs[i, :, past_width - c :] = layers[layer][1][0]
                past.append((ks, vs))
        with self.model_lock, torch.no_grad():
            self.set_adapter(adapter)
            out = self.model(
                input_ids=ids,
                attention_mask=None if bool(mask.all()) else mask,
                past_key_values=cache_from(past) if past else DynamicCache(),
                position_ids=positions,
                use_cache=True,
            )
        self.prefills += 1
        self.prefilled_rows += len(rows)
        return out, mask

    def _merge(self, adapter: str, rows: list[Running], layers: Layers, mask: torch.Tensor) -> None:
        """Adds pre-filled rows to the adapter's running batch (finished ones leave at once)."""
        batch = self.batches.get(adapter)
        if batch is None:
            self.batches[adapter] = batch = {"rows": rows, "layers": layers, "mask": mask, "cache": None}
        else:
            batch["layers"], batch["mask"] = stack_left_padded([(batch["layers"], batch["mask"]), (layers, mask)])
            batch["rows"] = batch["rows"] + rows
            batch["cache"] = None
        self._retire(adapter)

    def _step(self, adapter: str) -> None:
        batch = self.batches[adapter]
        rows = batch["rows"]
        started = time.perf_counter()
        dev = batch["mask"].device
        attention = torch.cat([batch["mask"], torch.ones(len(rows), 1, dtype=torch.long, device=dev)], dim=1)
        ids = torch.tensor([[r.next_id] for r in rows], device=dev)
        positions = torch.tensor([[r.length] for r in rows], device=dev)
        with self.model_lock, torch.no_grad():
            self.set_adapter(adapter)
            if batch["cache"] is None:  # the batch's rows changed
                batch["cache"] = running_cache(batch["layers"])
            out = self.model(
                input_ids=ids,
                attention_mask=None if bool(attention.all()) else attention,
                past_key_values=batch["cache"],
                position_ids=positions,
                use_cache=True,
            )
        self.steps += 1
        self.tokens_sampled += len(rows)
        batch["layers"], batch["mask"] = layers_of(out.past_key_values), attention
        logits = constrain(out.logits[:, -1].float(), [(r.req.constraint, r.out_ids) for r in rows])
        tokens, logprobs = draw(logits, [r.req.rule for r in rows], [r.generator for r in rows])
        share = (time.perf_counter() - started) / len(rows)
        for i, row in enumerate(rows):
            row.device_s += share
            row.length += 1
            row.next_id = tokens[i]
            row.out_ids.append(tokens[i])
            row.out_logprobs.append(logprobs[i])
        self._retire(adapter)

    def _retire(self, adapter: str) -> None:
        """Finished (or cancelled) rows leave the batch; a finished row's cache is kept, compacted."""
        batch = self.batches[adapter]
        rows, mask = batch["rows"], batch["mask"]
        keep = []
        for i, row in enumerate(rows):
            if row.req.future.done():  # cancelled (its request timed out): dropped, cache not kept
                continue
            if not self._finished(row):
                keep.append(i)
                continue
            cols = mask[i].nonzero().squeeze(1)
            self._finish(
                row,
                [(k[i : i + 1].index_select(2, cols), v[i : i + 1].index_select(2, cols)) for k, v in batch["layers"]],
            )
        if not keep:
            del self.batches[adapter]
            return
        if len(keep) < len(rows):
            index = torch.tensor(keep, device=mask.device)
            mask = mask.index_select(0, index)
            trim = int(mask.any(0).nonzero()[0])  # leading columns no row uses
            batch["layers"] = [
                (k.index_select(0, index)[:, :, trim:], v.index_select(0, index)[:, :, trim:])
                for k, v in batch["layers"]
            ]
            batch["mask"] = mask[:, trim:]
            batch["rows"] = [rows[i] for i in keep]
            batch["cache"] = None

    @staticmethod
    def _finished(row: Running) -> bool:
        return row.next_id in row.req.eos_ids or len(row.out_ids) >= row.req.max_tokens

    def _finish(self, row: Running, layers: Layers) -> None:
        # The cache covers the prompt and every sampled token but the last (never fed back).
        with self.cond:
            self.kv.put(row.req.key, row.req.ids + row.out_ids[:-1], layers)
        finish = "stop" if row.next_id in row.req.eos_ids else "length"
        if not row.req.future.done():
            row.req.future.set_result((row.out_ids, row.out_logprobs, finish, row.device_s))


def constrain(
    logits: torch.Tensor, rows: list[tuple[Callable[[list[int]], torch.Tensor] | None, list[int]]]
) -> torch.Tensor:
    """The logits with each constrained row's disallowed tokens at -inf: drawing from them (and
    the log-probability reported) is the model's distribution renormalised over the allowed ones."""
    if all(c is None for c, _ in rows):
        return logits
    logits = logits.clone()
    for i, (constraint, completion) in enumerate(rows):
        if constraint is not None:
            logits[i] = logits[i].masked_fill(~constraint(completion).to(logits.device), float("-inf"))
    return logits


def stack_left_padded(parts: list[tuple[Layers, torch.Tensor]]) -> tuple[Layers, torch.Tensor]:
    """Batches of (layers, mask) as one: each left-padded to the widest, rows in the parts' order."""
    width = max(mask.shape[1] for _, mask in parts)
    layers = [
        (left_padded([p[j][0] for p, _ in parts], width, 2), left_padded([p[j][1] for p, _ in parts], width, 2))
        for j in range(len(parts[0][0]))
    ]
    return layers, left_padded([mask for _, mask in parts], width, 1)


def left_padded(tensors: list[torch.Tensor], width: int, dim: int) -> torch.Tensor:
    """The tensors stacked on dim 0, each left-padded with zeros on `dim` to `width`, written once
    into one allocation: padding each and concatenating took 1.3 to 5 times the CPU to merge rows
    into a running batch of long contexts (`scripts/merge-bench.py`)."""
    shape = list(tensors[0].shape)
    shape[0], shape[dim] = sum(t.shape[0] for t in tensors), width
    out = tensors[0].new_empty(shape)
    start = 0
    for t in tensors:
        rows, pad = out.narrow(0, start, t.shape[0]), width - t.shape[dim]
        rows.narrow(dim, 0, pad).zero_()
        rows.narrow(dim, pad, t.shape[dim]).copy_(t)
        start += t.shape[0]
    return out


def pad_right(t: torch.Tensor, n: int) -> torch.Tensor:
    return torch.cat([t, t.new_zeros(t.shape[0], t.shape[1], n, t.shape[3])], dim=2)
