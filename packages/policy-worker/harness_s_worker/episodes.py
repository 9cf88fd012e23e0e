"""Sampling turn by turn: a sample request checked and turned into an engine request
(`prepare`), then recorded in its episode when the engine has run it (`finish`). An episode keeps
its ids by episode id until it is closed, or until an update publishes a new version."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from .chat import ChatFormat
from .constrained import Grammars, ToolGrammar
from .engine import Engine, Request
from .errors import WorkerError
from .replay import Turns
from .sampling import SamplingRule
from .schemas import SampleRequest, Version
from .textbound import TextBound


@dataclass
class Episode:
    ids: list[int]
    assistant: dict[str, Any] | None = None
    forced: list[int] = field(default_factory=list)
    #: The last turn's key (the request's Idempotency-Key) and its answer: the same request again gets it again.
    answered: tuple[str, dict[str, Any]] | None = None
    #: Set by a first turn with `constrain_tool_calls`: every turn of the episode is one tool call.
    grammar: ToolGrammar | None = None


class HeldPolicy(Protocol):
    """What an episode reads of the policy it samples from."""

    id: str
    adapter: str
    version: int
    episodes: dict[str, Episode]


class PolicyTable(Protocol):
    """The policies episodes sample from: looked up, and their version checked, under the table's lock."""

    def get(self, pid: str) -> HeldPolicy: ...
    def find(self, pid: str) -> HeldPolicy | None: ...
    def check_version(self, p: Any, want: Version | None) -> None: ...


class EpisodeLimits(Protocol):
    episodes_per_policy: int
    sample_timeout_s: float


@dataclass
class PendingTurn:
    """A sample request checked and waiting for the engine: what `finish` records once it ran."""

    policy: HeldPolicy
    episode_id: str
    prompt: list[int]
    prefix: list[int]
    version: int
    want: Version | None
    key: str | None = None
    grammar: ToolGrammar | None = None


class Episodes:
    """Handed what it uses: the policy table and its lock (one lock for the table and each
    policy's fields), the engine, the grammars, the chat format, the eos ids and the limits."""

    def __init__(
        self,
        table: PolicyTable,
        lock: threading.RLock,
        engine: Engine,
        grammars: Grammars,
        chat: ChatFormat,
        turns: Turns,
        eos_ids: frozenset[int],
        limits: EpisodeLimits,
        max_context: int,
        bound: TextBound,
    ) -> None:
        self.table = table
        self.lock = lock
        self.engine = engine
        self.grammars = grammars
        self.chat = chat
        self.turns = turns
        self.eos_ids = eos_ids
        self.limits = limits
        #: The model's context in tokens: an episode and its next turn must fit.
        self.max_context = max_context
        #: Text past what the context can hold is refused by its bytes, before it is rendered.
        self.bound = bound

    def render(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool
    ) -> list[int]:
        self.bound.check("messages and tools", [messages, tools], self.max_context)
        return self.chat.whole(messages, tools, generation_prompt)

    def answered(self, pid: str, episode_id: str, key: str) -> dict[str, Any] | None:
        """The answer already given to the turn keyed `key` (its request repeated after a lost reply), if any."""
        with self.lock:
            episode = self.table.get(pid).episodes.get(episode_id)
            return (
                episode.answered[1]
                if episode is not None and episode.answered is not None and episode.answered[0] == key
                else None
            )

    def prepare(self, pid: str, body: SampleRequest, key: str | None = None) -> tuple[Request, PendingTurn]:
        """Checks a sample request and builds its engine request (no model work). The lock is held
        only to read the policy and the episode: the text is measured, rendered and tokenised
        outside it, so a long one never holds up another request or the scheduler's admissions."""
        p, episode = self._turn_of(pid, body)
        max_tokens = body.sampling.max_tokens
        if episode is not None:
            # An episode is replaced, never changed, when a turn is recorded: this one stays as read.
            self.bound.check(
                "append", body.append, self.max_context - len(episode.ids) - len(episode.forced) - max_tokens
            )
            prompt = episode.forced + self.chat.delta(
                episode.assistant or {"role": "assistant", "content": ""}, body.append or []
            )
            prefix, grammar = episode.ids + prompt, episode.grammar
        else:
            self.bound.check("messages and tools", [body.messages, body.tools], self.max_context - max_tokens)
            prompt = self.chat.first(body.messages or [], body.tools)
            prefix = prompt
            grammar = self.grammars.grammar(body.tools or []) if body.constrain_tool_calls else None
        if len(prefix) + max_tokens > self.max_context:
            raise WorkerError(
                400,
                "CONTEXT_TOO_LONG",
                f"the episode would hold {len(prefix)} + {max_tokens} tokens, past the model's context of {self.max_context}",
            )
        context = PendingTurn(p, body.episode_id, prompt, prefix, p.version, body.version, key, grammar)

        def admit() -> None:  # on the scheduler thread, when the sequence starts
            with self.lock:
                if self.table.find(pid) is not p:
                    raise WorkerError(404, "NOT_FOUND", f"policy {pid!r} not found")
                self.table.check_version(p, context.want)
                context.version = p.version

        rule = SamplingRule(body.sampling.temperature, body.sampling.top_p)
        request = Request(
            p.adapter,
            f"{pid}/{body.episode_id}",
            prefix,
            rule,
            max_tokens,
            self.eos_ids,
            body.sampling.seed,
            admit=admit,
            constraint=grammar.allowed if grammar else None,
        )
        return request, context

    def _turn_of(self, pid: str, body: SampleRequest) -> tuple[HeldPolicy, Episode | None]:
        """The policy and the episode (None: a first turn) a sample request continues, checked
        under the lock: the version, the sampling rule, the episode cap, and the turn's kind."""
        with self.lock:
            p = self.table.get(pid)
            self.table.check_version(p, body.version)
            if (
                body.sampling.purpose == "train"
                and not SamplingRule(body.sampling.temperature, body.sampling.top_p).exact
            ):
                raise WorkerError(
                    400,
                    "VALIDATION_FAILED",
                    'sampling: a training sample ("purpose": "train", the default) is drawn at temperature 1 and top_p 1, so its log-probabilities are the ones an update scores; send "purpose": "eval" to sample otherwise',
                )
            episode_id = body.episode_id
            episode = p.episodes.get(episode_id)
            if episode is None and len(p.episodes) >= self.limits.episodes_per_policy:
                raise WorkerError(
                    429,
                    "CAPACITY_EXCEEDED",
                    f"policy {pid} has {self.limits.episodes_per_policy} open episodes, its limit; they close with the next update or DELETE",
                )
        if episode is not None:
            if body.messages:
                raise WorkerError(
                    400, "VALIDATION_FAILED", f"episode {episode_id} exists: send `append`, not `messages`"
                )
            if body.constrain_tool_calls and episode.grammar is None:
                raise WorkerError(
                    400,
                    "VALIDATION_FAILED",
                    f"episode {episode_id} was not started with constrain_tool_calls: its turns are free text",
                )
        elif not body.messages:
            raise WorkerError(400, "VALIDATION_FAILED", "a new episode needs `messages`")
        elif body.constrain_tool_calls and not body.tools:
            raise WorkerError(
                400, "VALIDATION_FAILED", "constrain_tool_calls needs `tools`: the calls are constrained to them"
            )
        return p, episode

    def finish(self, context: PendingTurn, result: tuple[list[int], list[float], str, float]) -> dict[str, Any]:
        """Records the turn in its episode and returns the completion (text, tool calls). A keyed
        turn that a repeat of its request already answered keeps that answer: the episode holds
        the one completion its caller was given, whichever of the two finished first."""
        ids, logprobs, finish, device_s = result
        turn = self.turns.after(ids)
        p = context.policy
        completion = {
            "ids": ids,
            "logprobs": logprobs,
            "text": turn["text"],
            "finish_reason": finish,
            "content": turn["content"],
        }
        if turn["calls"] is not None:
            completion["tool_calls"] = turn["calls"]
        if turn["parse_error"] is not None:
            completion["parse_error"] = turn["parse_error"]
        out = {
            "policy_version": context.version,
            "prompt_ids": context.prompt,
            "completion": completion,
            "usage": {"device_ms": round(device_s * 1000, 3)},
        }
        with self.lock:
            if p.version != context.version:  # an update published meanwhile closed the episode
                return out
            if context.key is not None:
                recorded = self.answered(p.id, context.episode_id, context.key)
                if recorded is not None:
                    return recorded
            p.episodes[context.episode_id] = Episode(
                context.prefix + ids,
                turn["assistant"],
                turn["forced"],
                (context.key, out) if context.key else None,
                context.grammar,
            )
        return out

    def sample(self, pid: str, body: SampleRequest) -> dict[str, Any]:
        """One turn, blocking (tests, the bench); the HTTP server awaits the engine instead."""
        request, context = self.prepare(pid, body)
        return self.finish(context, self.engine.submit(request).result(timeout=self.limits.sample_timeout_s))

    def close_episode(self, pid: str, episode_id: str) -> bool:
        """Forgets an episode's ids and cache; False when it was not open (closing is idempotent)."""
        with self.lock:
            closed = self.table.get(pid).episodes.pop(episode_id, None) is not None
        self.engine.forget_key(f"{pid}/{episode_id}")
        return closed
