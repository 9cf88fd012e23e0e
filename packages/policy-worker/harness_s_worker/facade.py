"""The OpenAI-compatible `/v1/chat/completions` façade over the same episodes as protocol v2, in
vLLM's reply shape (`vllm_wire.py` names the vLLM source read): the reply's `model` is the name
requested (`names.py`), `prompt_token_ids` the whole prompt the completion was sampled after, each
choice's `token_ids` the ids sampled, and `logprobs.content[i]` `token` / `logprob` / `bytes` /
`top_logprobs` (`token_id:<id>` with `return_tokens_as_token_ids`).

How a prompt is built (`--chat-prompts`):
- `episode` (the default): a conversation that continues one this façade answered (its messages
  start with an earlier request's messages and the assistant message returned for it) continues
  that episode: the new messages are appended by the delta rule, so the model sees the very ids a
  training episode would hold, not a fresh render of the whole conversation. Anything else starts a
  new episode.
- `render`: every request's messages are rendered whole by the chat template (tool-call arguments
  and tools as vLLM hands them to it), as vLLM does: with a template that is not append-only, or a
  completion whose text tokenises back to other ids, a later prompt does not extend the earlier
  prompt and completion, as with a real vLLM server."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .policies import Policies, Policy
from .names import resolve
from .sampling import SamplingRule
from .schemas import ChatRequest, SampleRequest, Sampling, Version
from .sglang_wire import meta_info
from .tokens import TokenTurn
from .vllm_wire import chat_logprobs, template_messages, template_tools

KEPT = 4096  # conversations remembered per worker (oldest forgotten first; a forgotten one re-renders)


def conversation_keys(pid: str, version: int, messages: list[dict[str, Any]]) -> list[str]:
    """The key of each prefix of a conversation (`keys[n]`: its first n messages), each chained from
    the one before, so every prefix of a long conversation is keyed in one pass over it."""

    def shape(m: dict[str, Any]) -> dict[str, Any]:
        calls = [
            {"name": c.get("function", {}).get("name"), "arguments": c.get("function", {}).get("arguments")}
            for c in m.get("tool_calls") or []
        ]
        return {"role": m.get("role"), "content": m.get("content") or "", "calls": calls}

    keys = [hashlib.sha256(json.dumps([pid, version]).encode()).hexdigest()]
    for m in messages:
        keys.append(hashlib.sha256(f"{keys[-1]}:{json.dumps(shape(m), sort_keys=True)}".encode()).hexdigest())
    return keys


class Facade:
    def __init__(self, policies: Policies, render: bool = False) -> None:
        self.policies = policies
        #: `--chat-prompts render`: every request rendered whole, its episode closed after its turn.
        self.render = render
        self.known: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()  # `known`: requests and responses run on the thread pool

    def request(self, body: ChatRequest) -> tuple[str, SampleRequest, list[int]]:
        """(policy id, the sample request, the ids the episode it continues holds) for a chat body."""
        served, p = resolve(self.policies, body.model)
        pid, pinned = served.policy_id, served.version is not None
        version = p.version if served.version is None else served.version
        purpose = "train" if SamplingRule(body.temperature, body.top_p).exact else "eval"
        sampling = Sampling(
            temperature=body.temperature,
            top_p=body.top_p,
            max_tokens=body.completion_tokens(),
            seed=body.seed,
            purpose=purpose,
        )
        messages = body.messages
        # Measured before anything else reads them (a first turn's bound: what the messages continue is not known yet).
        self.policies.bound.check(
            "messages and tools", [messages, body.tools], self.policies.adapted.max_context() - sampling.max_tokens
        )
        episode = f"chat-{uuid.uuid4().hex[:12]}"
        if self.render:
            return (
                pid,
                SampleRequest(
                    episode_id=episode,
                    version=Version(exact=version),
                    messages=template_messages(messages),
                    tools=template_tools(body.tools),
                    sampling=sampling,
                ),
                [],
            )
        keys = conversation_keys(pid, version, messages)
        for cut in range(len(messages) - 1, 0, -1):
            if messages[cut - 1].get("role") != "assistant":
                continue
            with self.lock:
                known = self.known.get(keys[cut])
            held = self.held(p, known)
            if known is not None and held is not None:
                return (
                    pid,
                    SampleRequest(
                        episode_id=known, version=Version(exact=version), append=messages[cut:], sampling=sampling
                    ),
                    held,
                )
        return (
            pid,
            SampleRequest(
                episode_id=episode,
                version=Version(exact=version) if pinned else None,
                messages=messages,
                tools=body.tools,
                sampling=sampling,
            ),
            [],
        )

    def held(self, p: Policy, episode_id: str | None) -> list[int] | None:
        """The ids an open episode holds (None: no such episode)."""
        with self.policies.lock:
            episode = p.episodes.get(episode_id) if episode_id is not None else None
            return list(episode.ids) if episode is not None else None

    def remember(
        self, pid: str, req: SampleRequest, messages: list[dict[str, Any]], version: int, message: dict[str, Any]
    ) -> None:
        """Keys the conversation's episode by its messages and the reply (render mode closes it instead)."""
        if self.render:
            self.policies.episodes.close_episode(pid, req.episode_id)
            return
        key = conversation_keys(pid, version, [*messages, message])[-1]
        with self.lock:
            self.known[key] = req.episode_id
            while len(self.known) > KEPT:
                self.known.popitem(last=False)

    def response(
        self,
        pid: str,
        req: SampleRequest,
        body: ChatRequest,
        held: list[int],
        out: dict[str, Any],
        seconds: float = 0.0,
    ) -> dict[str, Any]:
        """vLLM's `ChatCompletionResponse` for one sampled turn (`model`: the name requested), with
        SGLang's per-choice `prompt_token_ids` and `meta_info` where its flags ask for them (`seconds`:
        the request's time so far, `meta_info.e2e_latency`)."""
        comp = out["completion"]
        # The whole prompt the completion followed: an episode's ids so far and the ids this turn added.
        prompt = held + out["prompt_ids"]
        calls = comp.get("tool_calls") or []
        message: dict[str, Any] = {"role": "assistant", "content": comp["content"] or None}
        if calls:
            message["tool_calls"] = calls
        self.remember(pid, req, body.messages, out["policy_version"], message)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {
                **message,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "tool_calls": calls,
                "reasoning": None,
            },
            "logprobs": chat_logprobs(
                self.policies.tokenizer.decode, comp["ids"], comp["logprobs"], body.return_tokens_as_token_ids
            )
            if body.logprobs
            else None,
            "finish_reason": "tool_calls" if calls else comp["finish_reason"],
            "stop_reason": None,
            "token_ids": comp["ids"],
        }
        if comp.get("parse_error"):
            choice["parse_error"] = comp["parse_error"]
        if body.return_prompt_token_ids or body.return_token_ids:  # SGLang's choice-level ids
            choice["prompt_token_ids"] = prompt
        if body.return_meta_info:
            turn = TokenTurn(
                prompt, comp["ids"], comp["logprobs"], comp["finish_reason"], out["policy_version"], seconds
            )
            # As SGLang's chat samples: `return_logprob` = `logprobs`, `logprob_start_len` -1, texts in the logprobs.
            choice["meta_info"] = meta_info(req.episode_id, turn, self.policies.tokenizer.decode, body.logprobs, True)
        return {
            "id": req.episode_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.model,
            "choices": [choice],
            "service_tier": None,
            "system_fingerprint": None,
            "usage": {
                "prompt_tokens": len(prompt),
                "total_tokens": len(prompt) + len(comp["ids"]),
                "completion_tokens": len(comp["ids"]),
                "prompt_tokens_details": None,
            },
            "prompt_logprobs": None,
            "prompt_token_ids": prompt,
            "kv_transfer_params": None,
        }
