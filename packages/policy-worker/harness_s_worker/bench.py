"""Throughput of the worker, measured in one run against baselines on the same model:

- sampling tokens/s over HTTP at 1, 8 and 32 concurrent episodes (the worker in its own process,
  as deployed), in rounds of episodes started together (a training step's rollouts) next to
  transformers' batched `generate` driven directly on the same model and adapter with as many
  sequences; and closed-loop (each client starts a new episode when its last one ended, so
  sequences join and leave the running batch at every step) with the batch it kept;
- update tokens/s through HTTP (submitted, then long-polled) next to a direct loop over the same
  training code;
- with `--memory`, peak update memory at 8 / 32 / 128 datums of 1k tokens, micro-batched (the
  default token budget) against the whole batch in one micro-batch.

`python -m harness_s_worker.bench [--model tiny] [--seconds 3] [--device cpu] [--memory]`."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import torch

from .policies import Policies
from .schemas import CreatePolicy, SampleRequest, UpdateRequest
from .server import build
from .threads import set_threads
from .updates import train

SPEC = {"base_model": "tiny", "lora": {"rank": 8, "alpha": 16, "targets": ["q_proj", "v_proj"]}, "seed": 0}
MESSAGES = [{"role": "user", "content": "say yes"}]
LEVELS = (1, 8, 32)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(seconds: float, one: Callable[[], int]) -> float:
    """Tokens per second of `one()` (which returns the tokens it handled), repeated for `seconds`."""
    one()  # warm-up
    tokens, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        tokens += one()
    return tokens / (time.perf_counter() - start)


def generated(row: list[int], eos: frozenset[int]) -> int:
    """Tokens a sequence produced: up to and including its first end-of-turn token."""
    for i, t in enumerate(row):
        if t in eos:
            return i + 1
    return len(row)


def direct_generate(policies: Policies, adapter: str, prompt: list[int], n: int, max_tokens: int, seed: int) -> int:
    """`n` sequences from one prompt through `generate` in one batch; the tokens they produced."""
    torch.manual_seed(seed)
    dev = next(policies.adapted.base.parameters()).device
    with policies.adapted.lock, torch.no_grad():
        policies.adapted.peft.set_adapter(adapter)
        out = policies.adapted.peft.generate(
            input_ids=torch.tensor([prompt] * n, device=dev),
            attention_mask=torch.ones(n, len(prompt), dtype=torch.long, device=dev),
            max_new_tokens=max_tokens,
            do_sample=True,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            eos_token_id=sorted(policies.eos_ids),
            pad_token_id=policies.tokenizer.pad_token_id,
        )
    return sum(generated(row, policies.eos_ids) for row in out[:, len(prompt) :].tolist())


def http_rounds(
    http: httpx.Client, pool: ThreadPoolExecutor, n: int, max_tokens: int, seconds: float, counter: dict[str, Any]
) -> float:
    """Tokens/s of rounds of `n` episodes started together, each round waiting for all of them
    (a training step's rollouts; the same shape as one batched `generate`)."""

    def one(_: int) -> int:
        counter["i"] += 1
        r = http.post(
            "/v2/policies/http/sample",
            json={
                "episode_id": f"r{counter['i']}",
                "messages": MESSAGES,
                "sampling": {"max_tokens": max_tokens, "seed": counter["i"]},
            },
        )
        r.raise_for_status()
        return len(r.json()["completion"]["ids"])

    tokens, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        tokens += sum(pool.map(one, range(n)))
    return tokens / (time.perf_counter() - start)


def http_closed_loop(http: httpx.Client, n: int, max_tokens: int, seconds: float, counter: dict[str, Any]) -> float:
    """Tokens/s of `n` clients each starting a new episode as soon as its last one ended."""
    stop = time.perf_counter() + seconds
    totals = [0] * n

    def client(k: int) -> None:
        while time.perf_counter() < stop:
            counter["i"] += 1
            r = http.post(
                "/v2/policies/http/sample",
                json={
                    "episode_id": f"h{counter['i']}-{k}",
                    "messages": MESSAGES,
                    "sampling": {"max_tokens": max_tokens, "seed": counter["i"]},
                },
            )
            r.raise_for_status()
            totals[k] += len(r.json()["completion"]["ids"])

    start = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(client, range(n)))
    return sum(totals) / (time.perf_counter() - start)


def start_worker(
    model: str, device: str, threads: int | None, flags: tuple[str, ...] = ("--max-episodes", "100000")
) -> tuple[subprocess.Popen[bytes], httpx.Client]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "harness_s_worker.launch",
        "--model",
        model,
        "--port",
        str(port),
        "--device",
        device,
        *flags,
    ]
    if threads:
        cmd += ["--threads", str(threads)]
    worker = subprocess.Popen(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600, limits=httpx.Limits(max_connections=64))
    deadline = time.monotonic() + 300  # importing torch on a loaded machine can take minutes
    while time.monotonic() < deadline:
        try:
            if http.get("/healthz").status_code == 200:
                return worker, http
        except httpx.TransportError:
            time.sleep(0.1)
    worker.kill()
    raise RuntimeError("the worker did not start within 300 s")


def update_body(policies: Policies, n: int = 16, max_tokens: int = 32) -> tuple[dict[str, Any], int]:
    prompt = policies.episodes.render(MESSAGES, None, True)
    datums = []
    for i in range(n):
        s = policies.episodes.sample(
            "direct",
            SampleRequest.model_validate(
                {
                    "episode_id": f"b{i}",
                    "messages": MESSAGES,
                    "sampling": {"max_tokens": max_tokens, "seed": 10_000 + i},
                }
            ),
        )
        ids = s["completion"]["ids"]
        datums.append(
            {
                "sample_id": str(i),
                "group_id": "g",
                "ids": prompt + ids,
                "loss_mask": [0] * len(prompt) + [1] * len(ids),
                "behaviour_logprobs": [0.0] * len(prompt) + s["completion"]["logprobs"],
                "advantage": 1.0 if i % 2 else -1.0,
            }
        )
    body = {
        "datums": datums,
        "loss": {"clip_low": 0.2, "clip_high": 0.2, "agg": "token-mean", "kl_coef": 0.0},
        "optim": {"lr": 1e-4, "epochs": 1},
    }
    return body, sum(len(d["ids"]) for d in datums)


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def update_memory(policies: Policies, sizes: tuple[int, ...] = (8, 32, 128), length: int = 1024) -> dict[str, Any]:
    """Peak memory (MB above the resting figure: RSS on CPU, allocated on CUDA) of one update."""
    policies.create("memory", CreatePolicy.model_validate(SPEC))
    p = policies.get("memory")
    vocab = policies.adapted.vocab_size()
    gen = torch.Generator().manual_seed(0)
    cuda = next(policies.adapted.base.parameters()).is_cuda
    out = {}
    for n in (sizes[0], *sizes):  # the first round warms the allocator up; its row is overwritten
        datums = []
        for i in range(n):
            ids = torch.randint(0, vocab, (length,), generator=gen).tolist()
            half = length // 2
            datums.append(
                {
                    "sample_id": str(i),
                    "group_id": "g",
                    "ids": ids,
                    "loss_mask": [0] * half + [1] * (length - half),
                    "behaviour_logprobs": [0.0] * half + [-5.0] * (length - half),
                    "advantage": 1.0 if i % 2 else -1.0,
                }
            )
        row = {}
        for label, budget in (("micro_batched", None), ("whole_batch", n * length)):
            optim = {"lr": 1e-6, "epochs": 1, **({"micro_batch_tokens": budget} if budget else {})}
            body = {
                "base_version": p.version,
                "datums": datums,
                "loss": {"clip_low": 0.2, "clip_high": 0.2, "agg": "token-mean", "kl_coef": 0.0},
                "optim": optim,
            }
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                rest = float(torch.cuda.memory_allocated())
            else:
                reset_peak_rss()
                rest = peak_rss_mb()
            train(policies, p, UpdateRequest.model_validate(body))
            row[label] = round((torch.cuda.max_memory_allocated() - rest) / 2**20 if cuda else peak_rss_mb() - rest, 1)
        out[f"{n}x{length}"] = row
    return out


def parse_args() -> argparse.Namespace:
    """The benchmark's command line: the model and device, how long each measurement runs, what is measured."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument(
        "--threads", type=int, default=None, help="as the server: 1 for a model under 20M parameters on CPU by default"
    )
    ap.add_argument("--update-datums", type=int, default=64, help="datums in each timed update")
    ap.add_argument(
        "--memory", action="store_true", help="also the peak memory of updates of 8, 32 and 128 datums of 1k tokens"
    )
    return ap.parse_args()


def sampling_rates(
    policies: Policies,
    adapter: str,
    prompt: list[int],
    http: httpx.Client,
    args: argparse.Namespace,
    counter: dict[str, Any],
) -> dict[str, Any]:
    """Sampling tokens/s at each level of concurrency: direct `generate`, HTTP rounds and the HTTP closed loop (with
    the batch it kept), and how HTTP at 32 episodes compares with HTTP at 1."""
    sampling: dict[str, Any] = {}
    for n in LEVELS:

        def generate_batch(n: int = n) -> int:
            return direct_generate(policies, adapter, prompt, n, args.max_tokens, counter.setdefault("s", 0) + n)

        direct = timed(args.seconds, generate_batch)
        with ThreadPoolExecutor(n) as pool:
            http_rounds(http, pool, n, args.max_tokens, 0.5, counter)  # warm-up
            rounds = http_rounds(http, pool, n, args.max_tokens, args.seconds, counter)
        steps = http.get("/healthz").json()["sampler"]["steps"]
        started = time.perf_counter()
        closed = http_closed_loop(http, n, args.max_tokens, args.seconds, counter)
        steps = http.get("/healthz").json()["sampler"]["steps"] - steps
        mean_batch = closed * (time.perf_counter() - started) / max(steps, 1)
        sampling[str(n)] = {
            "http": round(rounds, 1),
            "direct_generate": round(direct, 1),
            "http_over_direct": round(rounds / direct, 3),
            "http_closed_loop": round(closed, 1),
            "closed_loop_mean_batch": round(mean_batch, 1),
        }
    sampling["http_32_over_http_1"] = round(sampling["32"]["http"] / sampling["1"]["http"], 2)
    return sampling


def main() -> None:
    args = parse_args()
    state_dir = Path(tempfile.mkdtemp(prefix="harness-s-bench-"))
    atexit.register(shutil.rmtree, state_dir, ignore_errors=True)
    policies, name = build(args.model, state_dir, args.device)
    set_threads(sum(p.numel() for p in policies.adapted.base.parameters()), args.device, args.threads)
    SPEC["base_model"] = name
    policies.create("direct", CreatePolicy.model_validate(SPEC))
    adapter = policies.get("direct").adapter
    prompt = policies.episodes.render(MESSAGES, None, True)
    worker, http = start_worker(args.model, args.device, args.threads)
    try:
        http.put("/v2/policies/http", json=SPEC).raise_for_status()
        counter = {"i": 0}
        sampling = sampling_rates(policies, adapter, prompt, http, args, counter)
        body, tokens = update_body(policies, n=args.update_datums, max_tokens=args.max_tokens)

        def direct_update() -> int:
            p = policies.get("direct")
            train(policies, p, UpdateRequest.model_validate({"base_version": p.version, **body}))
            policies.publish(p)
            return tokens

        def http_update() -> int:
            v = http.get("/v2/policies/http").json()["version"]
            uid = http.post(
                "/v2/policies/http/updates", json={"base_version": v, **body}, headers={"Idempotency-Key": f"u{v}"}
            ).json()["update_id"]
            while http.get(f"/v2/updates/{uid}", params={"wait": 30}).json()["status"] not in ("done", "failed"):
                pass
            return tokens

        update_direct = timed(args.seconds, direct_update)
        update_http = timed(args.seconds, http_update)
        health = http.get("/healthz").json()
    finally:
        worker.terminate()
        worker.wait(30)
    result = {
        "model": name,
        "device": args.device,
        "max_tokens": args.max_tokens,
        "sample_tokens_per_s": sampling,
        "update_tokens_per_s": {
            "direct": round(update_direct, 1),
            "http": round(update_http, 1),
            "http_over_direct": round(update_http / update_direct, 3),
        },
        "worker_sampler": health.get("sampler"),
    }
    if args.memory:
        result["update_peak_mb"] = update_memory(policies)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
