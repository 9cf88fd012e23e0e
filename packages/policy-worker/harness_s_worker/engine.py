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

import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from .sampling import SamplingRule, draw


@dataclass
class Request:
    adapter: str
    key: str
    ids: list[int]
    rule: SamplingRule
    max_tokens: int
    eos_ids: frozenset[int]
    seed: int | None = None
    future: Future = field(default_factory=Future)
    # Called on the scheduler thread just before the sequence starts; raising refuses it.
    admit: object = None


@dataclass
class Running:
    req: Request
    generator: torch.Generator
    length: int  # true tokens in the cache
    next_id: int
    out_ids: list[int] = field(default_factory=list)
    out_logprobs: list[float] = field(default_factory=list)


def layers_of(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(layer.keys, layer.values) for layer in cache.layers]


def cache_from(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    cache = DynamicCache()
    for i, (k, v) in enumerate(layers):
        cache.update(k, v, i)
    return cache


class KvStore:
    """Per-episode caches (keys and values of each layer, batch 1) by episode key, LRU within a byte budget."""

    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self.used = 0
        self.entries: OrderedDict[str, tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]], int]] = OrderedDict()
        self.hits = self.misses = self.evictions = 0

    @staticmethod
    def size(layers) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers)

    def take(self, key: str, ids: list[int]):
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

    def put(self, key: str, ids: list[int], layers) -> None:
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
            self.used -= self.entries.pop(key)[2]


class Engine:
    """The scheduler: `submit` a request, get a Future of (ids, logprobs, finish_reason, version)."""

    def __init__(self, model, model_lock: threading.Lock, set_adapter, cache_bytes: int = 1 << 30, max_batch: int = 64):
        self.model, self.model_lock, self.set_adapter = model, model_lock, set_adapter
        self.kv = KvStore(cache_bytes)
        self.max_batch = max_batch
        self.pending: OrderedDict[str, list[Request]] = OrderedDict()
        self.batches: dict[str, dict] = {}
        self.barriers: dict[str, list[tuple[object, Future]]] = {}
        self.cond = threading.Condition()
        self.stopped = False
        self.steps = 0
        self.thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self.thread.start()

    def submit(self, req: Request) -> Future:
        with self.cond:
            self.pending.setdefault(req.adapter, []).append(req)
            self.cond.notify()
        return req.future

    def barrier(self, adapter: str, fn) -> Future:
        """Runs `fn` on the scheduler thread once no sequence of `adapter` is running; none is
        admitted meanwhile (a publish or a delete never lands in the middle of a turn)."""
        future: Future = Future()
        with self.cond:
            self.barriers.setdefault(adapter, []).append((fn, future))
            self.cond.notify()
        return future

    def forget(self, key_prefix: str) -> None:
        with self.cond:
            self.kv.drop(key_prefix)

    def idle(self, adapter: str) -> bool:
        with self.cond:
            return not self.pending.get(adapter) and adapter not in self.batches

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify()

    def _loop(self) -> None:
        turn = 0
        while True:
            with self.cond:
                while not self.stopped and not self.batches and not any(self.pending.values()) and not self.barriers:
                    self.cond.wait()
                if self.stopped:
                    return
                due = [(a, self.barriers.pop(a)) for a in list(self.barriers) if a not in self.batches]
            for _, items in due:
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
                room = 0 if adapter in self.barriers else self.max_batch - len(self.batches.get(adapter, {}).get("rows", []))
                queue = self.pending.get(adapter, [])
                joining, self.pending[adapter] = queue[:room], queue[room:]
            if not joining and adapter not in self.batches:
                continue
            for req in joining:
                try:
                    self._join(adapter, req)
                except Exception as err:  # its pre-fill failed: this request fails, nothing else
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

    def _join(self, adapter: str, req: Request) -> None:
        if req.future.done():
            return
        try:
            if callable(req.admit):
                req.admit()
        except Exception as err:
            req.future.set_exception(err)
            return
        generator = torch.Generator(device="cpu")
        generator.manual_seed(req.seed if req.seed is not None else int(torch.randint(0, 2**31, (1,))))
        with self.cond:
            layers, cached = self.kv.take(req.key, req.ids)
        dev = next(self.model.parameters()).device
        new = torch.tensor([req.ids[cached:]], device=dev)
        positions = torch.arange(cached, len(req.ids), device=dev).unsqueeze(0)
        with self.model_lock, torch.no_grad():
            self.set_adapter(adapter)
            out = self.model(input_ids=new, past_key_values=cache_from(layers) if layers else DynamicCache(), position_ids=positions, use_cache=True)
        token, logprob = draw(out.logits[:, -1].float(), [req.rule], [generator])
        row = Running(req, generator, len(req.ids), int(token[0]))
        row.out_ids.append(row.next_id)
        row.out_logprobs.append(float(logprob[0]))
        own = layers_of(out.past_key_values)
        if self._finished(row):
            self._finish(row, own)
            return
        self._add_row(adapter, row, own)

    def _add_row(self, adapter: str, row: Running, own) -> None:
        batch = self.batches.get(adapter)
        if batch is None:
            self.batches[adapter] = {"rows": [row], "layers": own, "pad": [0]}
            return
        width = batch["layers"][0][0].shape[2]
        if row.length > width:  # widen everyone on the left
            extra = row.length - width
            batch["layers"] = [(pad_left(k, extra), pad_left(v, extra)) for k, v in batch["layers"]]
            batch["pad"] = [p + extra for p in batch["pad"]]
            width = row.length
        gap = width - row.length
        batch["layers"] = [(torch.cat([k, pad_left(rk, gap)]), torch.cat([v, pad_left(rv, gap)])) for (k, v), (rk, rv) in zip(batch["layers"], own)]
        batch["rows"].append(row)
        batch["pad"].append(gap)

    def _step(self, adapter: str) -> None:
        batch = self.batches[adapter]
        rows, pads = batch["rows"], batch["pad"]
        width = batch["layers"][0][0].shape[2]
        dev = batch["layers"][0][0].device
        attention = torch.ones(len(rows), width + 1, dtype=torch.long, device=dev)
        for i, p in enumerate(pads):
            attention[i, :p] = 0
        ids = torch.tensor([[r.next_id] for r in rows], device=dev)
        positions = torch.tensor([[r.length] for r in rows], device=dev)
        with self.model_lock, torch.no_grad():
            self.set_adapter(adapter)
            out = self.model(input_ids=ids, attention_mask=attention, past_key_values=cache_from(batch["layers"]), position_ids=positions, use_cache=True)
        self.steps += 1
        batch["layers"] = layers_of(out.past_key_values)
        tokens, logprobs = draw(out.logits[:, -1].float(), [r.req.rule for r in rows], [r.generator for r in rows])
        keep = []
        for i, row in enumerate(rows):
            row.length += 1
            row.next_id = int(tokens[i])
            row.out_ids.append(row.next_id)
            row.out_logprobs.append(float(logprobs[i]))
            if row.req.future.done():  # cancelled (its request timed out): dropped, cache not kept
                continue
            if self._finished(row):
                p = pads[i]
                self._finish(row, [(k[i : i + 1, :, p:].clone(), v[i : i + 1, :, p:].clone()) for k, v in batch["layers"]])
            else:
                keep.append(i)
        if not keep:
            del self.batches[adapter]
            return
        if len(keep) < len(rows):
            index = torch.tensor(keep, device=dev)
            trim = min(pads[i] for i in keep)
            batch["layers"] = [(k.index_select(0, index)[:, :, trim:], v.index_select(0, index)[:, :, trim:]) for k, v in batch["layers"]]
            batch["rows"] = [rows[i] for i in keep]
            batch["pad"] = [pads[i] - trim for i in keep]

    @staticmethod
    def _finished(row: Running) -> bool:
        return row.next_id in row.req.eos_ids or len(row.out_ids) >= row.req.max_tokens

    def _finish(self, row: Running, layers) -> None:
        # The cache covers the prompt and every sampled token but the last (never fed back).
        with self.cond:
            self.kv.put(row.req.key, row.req.ids + row.out_ids[:-1], layers)
        finish = "stop" if row.next_id in row.req.eos_ids else "length"
        if not row.req.future.done():
            row.req.future.set_result((row.out_ids, row.out_logprobs, finish))


def pad_left(t: torch.Tensor, n: int) -> torch.Tensor:
    if n == 0:
        return t
    return torch.cat([t.new_zeros(t.shape[0], t.shape[1], n, t.shape[3]), t], dim=2)
