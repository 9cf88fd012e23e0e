"""Throughput of the worker: sampling and update tokens/s through HTTP (protocol v2) next to the
same model driven directly in Python, measured in one run; prints the overhead ratios.
`python -m harness_s_worker.bench [--model tiny] [--seconds 3] [--device cpu]`."""
from __future__ import annotations

import argparse
import json
import socket
import tempfile
import threading
import time
from pathlib import Path

import httpx
import torch
import uvicorn

from .server import build, create_app, set_threads

SPEC = {"base_model": "tiny", "lora": {"rank": 8, "alpha": 16, "targets": ["q_proj", "v_proj"]}, "seed": 0}
MESSAGES = [{"role": "user", "content": "say yes"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(seconds: float, one) -> float:
    """Tokens per second of `one()` (which returns the tokens it handled), repeated for `seconds`."""
    one()  # warm-up
    tokens, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        tokens += one()
    return tokens / (time.perf_counter() - start)


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def update_memory(policies, sizes=(8, 32, 128), length=1024) -> dict:
    """Peak memory of one update of `n` datums of `length` tokens, micro-batched (the default token
    budget) against the whole batch in one micro-batch (what the update did before): peak RSS on
    CPU, peak allocated on CUDA, in MB above the resting figure."""
    policies.create("memory", SPEC)
    p = policies.get("memory")
    vocab = policies.vocab_size()
    gen = torch.Generator().manual_seed(0)
    cuda = next(policies.base.parameters()).is_cuda
    out = {}
    for n in (sizes[0], *sizes):  # the first round warms the allocator up and is not reported
        datums = []
        for i in range(n):
            ids = torch.randint(0, vocab, (length,), generator=gen).tolist()
            half = length // 2
            datums.append({"sample_id": str(i), "group_id": "g", "ids": ids, "loss_mask": [0] * half + [1] * (length - half), "behaviour_logprobs": [0.0] * half + [-5.0] * (length - half), "advantage": 1.0 if i % 2 else -1.0})
        row = {}
        for label, budget in (("micro_batched", None), ("whole_batch", n * length)):
            optim = {"lr": 1e-6, "epochs": 1, **({"micro_batch_tokens": budget} if budget else {})}
            body = {"base_version": p.version, "datums": datums, "loss": {"clip_low": 0.2, "clip_high": 0.2, "agg": "token-mean", "kl_coef": 0.0}, "optim": optim}
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                rest = torch.cuda.memory_allocated()
            else:
                reset_peak_rss()
                rest = peak_rss_mb()
            with policies.lock:
                policies._update(p, body)
            row[label] = round((torch.cuda.max_memory_allocated() - rest) / 2**20 if cuda else peak_rss_mb() - rest, 1)
        out[f"{n}x{length}"] = row
    return out  # the warm-up's row was overwritten by the first reported one


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=None, help="as the server: 1 for the tiny model on CPU by default")
    ap.add_argument("--memory", action="store_true", help="also the peak memory of updates of 8, 32 and 128 datums of 1k tokens")
    args = ap.parse_args()
    set_threads(args.model, args.device, args.threads)
    policies, name = build(args.model, Path(tempfile.mkdtemp()), args.device)
    SPEC["base_model"] = name
    policies.create("direct", SPEC)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(policies, None, name), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600)
    http.put("/v2/policies/http", json=SPEC).raise_for_status()
    sampling = {"temperature": 1.0, "top_p": 1.0, "max_tokens": args.max_tokens}
    n = {"i": 0}

    def direct_sample():
        n["i"] += 1
        return len(policies.sample("direct", {"episode_id": f"d{n['i']}", "messages": MESSAGES, "sampling": {**sampling, "seed": n["i"]}})["ids"])

    def http_sample():
        n["i"] += 1
        r = http.post("/v2/policies/http/sample", json={"episode_id": f"h{n['i']}", "messages": MESSAGES, "sampling": {**sampling, "seed": n["i"]}})
        return len(r.json()["completion"]["ids"])

    sample_direct = timed(args.seconds, direct_sample)
    sample_http = timed(args.seconds, http_sample)
    batch = [policies.sample("direct", {"episode_id": f"b{i}", "messages": MESSAGES, "sampling": {**sampling, "seed": 10_000 + i}}) for i in range(16)]
    datums = []
    for i, s in enumerate(batch):
        prompt = policies.render(MESSAGES, None, True)
        datums.append({"sample_id": str(i), "group_id": "g", "ids": prompt + s["ids"], "loss_mask": [0] * len(prompt) + [1] * len(s["ids"]), "behaviour_logprobs": [0.0] * len(prompt) + s["logprobs"], "advantage": 1.0 if i % 2 else -1.0})
    tokens = sum(len(d["ids"]) for d in datums)
    body = {"datums": datums, "loss": {"clip_low": 0.2, "clip_high": 0.2, "agg": "token-mean", "kl_coef": 0.0}, "optim": {"lr": 1e-4, "epochs": 1}}

    def direct_update():
        p = policies.get("direct")
        with policies.lock:
            policies._update(p, {"base_version": p.version, **body})
            p.version += 1
        return tokens

    def http_update():
        v = http.get("/v2/policies/http").json()["version"]
        r = http.post("/v2/policies/http/updates", json={"base_version": v, **body}, headers={"Idempotency-Key": f"u{v}"})
        uid = r.json()["update_id"]
        while http.get(f"/v2/updates/{uid}").json()["status"] not in ("done", "failed"):
            time.sleep(0.002)
        return tokens

    update_direct = timed(args.seconds, direct_update)
    update_http = timed(args.seconds, http_update)
    result = {
        "model": name,
        "device": args.device,
        "sample_tokens_per_s": {"direct": round(sample_direct, 1), "http": round(sample_http, 1), "http_over_direct": round(sample_http / sample_direct, 3)},
        "update_tokens_per_s": {"direct": round(update_direct, 1), "http": round(update_http, 1), "http_over_direct": round(update_http / update_direct, 3)},
    }
    if args.memory:
        result["update_peak_mb"] = update_memory(policies)
    print(json.dumps(result))
    server.should_exit = True


if __name__ == "__main__":
    main()
