"""The OpenAI-compatible `/v1/chat/completions` façade over the same episodes as protocol v2.

A conversation that continues one this façade answered (its messages start with an earlier
request's messages and the assistant message returned for it) continues that episode: the new
messages are appended by the delta rule, so the model sees the very ids a training episode
would hold, not a fresh render of the whole conversation. Anything else starts a new episode."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .policies import Policies
from .errors import WorkerError
from .sampling import SamplingRule
from .schemas import ChatRequest, SampleRequest, Sampling, Version

KEPT = 4096  # conversations remembered per worker (oldest forgotten first; a forgotten one re-renders)


def conversation_keys(pid: str, version: int, messages: list[dict[str, Any]]) -> list[str]:
    """The key of each prefix of a conversation (`keys[n]`: its first n messages), each chained from
    the one before, so every prefix of a long conversation is keyed in one pass over it."""

    def shape(m: dict[str, Any]) -> dict[str, Any]:
        calls = [{"name": c.get("function", {}).get("name"), "arguments": c.get("function", {}).get("arguments")} for c in m.get("tool_calls") or []]
        return {"role": m.get("role"), "content": m.get("content") or "", "calls": calls}

    keys = [hashlib.sha256(json.dumps([pid, version]).encode()).hexdigest()]
    for m in messages:
        keys.append(hashlib.sha256(f"{keys[-1]}:{json.dumps(shape(m), sort_keys=True)}".encode()).hexdigest())
    return keys


class Facade:
    def __init__(self, policies: Policies) -> None:
        self.policies = policies
        self.known: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()  # `known`: requests and responses run on the thread pool

    def request(self, body: ChatRequest) -> tuple[str, SampleRequest, list[dict[str, Any]]]:
        """(policy id, the sample request, the messages as sent) for a chat body."""
        pid, pinned, v = body.model.partition("@v")
        if pinned and not v.isdigit():
            raise WorkerError(400, "VALIDATION_FAILED", f"model: {body.model!r} is <policy> or <policy>@v<version number>")
        p = self.policies.get(pid)
        version = int(v) if pinned else p.version
        purpose = "train" if SamplingRule(body.temperature, body.top_p).exact else "eval"
        sampling = Sampling(temperature=body.temperature, top_p=body.top_p, max_tokens=body.max_tokens or 64, seed=body.seed, purpose=purpose)
        messages = body.messages
        # Measured before anything else reads them (a first turn's bound: what the messages continue is not known yet).
        self.policies.bound.check("messages and tools", [messages, body.tools], self.policies.adapted.max_context() - sampling.max_tokens)
        keys = conversation_keys(pid, version, messages)
        for cut in range(len(messages) - 1, 0, -1):
            if messages[cut - 1].get("role") != "assistant":
                continue
            with self.lock:
                episode = self.known.get(keys[cut])
            if episode is not None and episode in p.episodes:
                return pid, SampleRequest(episode_id=episode, version=Version(exact=version), append=messages[cut:], sampling=sampling), messages
        episode = f"chat-{uuid.uuid4().hex[:12]}"
        return pid, SampleRequest(episode_id=episode, version=Version(exact=version) if pinned else None, messages=messages, tools=body.tools, sampling=sampling), messages

    def response(self, pid: str, req: SampleRequest, messages: list[dict[str, Any]], out: dict[str, Any], logprobs: bool) -> dict[str, Any]:
        comp = out["completion"]
        message: dict[str, Any] = {"role": "assistant", "content": comp["content"] or None}
        if comp.get("tool_calls"):
            message["tool_calls"] = comp["tool_calls"]
        key = conversation_keys(pid, out["policy_version"], [*messages, message])[-1]
        with self.lock:
            self.known[key] = req.episode_id
            while len(self.known) > KEPT:
                self.known.popitem(last=False)
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "tool_calls" if comp.get("tool_calls") else comp["finish_reason"], "token_ids": comp["ids"]}
        if comp.get("parse_error"):
            choice["parse_error"] = comp["parse_error"]
        if logprobs:
            decode = self.policies.tokenizer.decode
            choice["logprobs"] = {"content": [{"token": decode([t]), "logprob": lp} for t, lp in zip(comp["ids"], comp["logprobs"], strict=True)]}
        prompt = out["prompt_ids"]
        return {
            "id": req.episode_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": f"{pid}@v{out['policy_version']}",
            "choices": [choice],
            "prompt_token_ids": prompt,
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(comp["ids"]), "total_tokens": len(prompt) + len(comp["ids"])},
        }
