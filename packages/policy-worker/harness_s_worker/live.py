"""A model someone else trains in this process (a TRL trainer's), served over protocol v2 as one
policy: sampled and scored with the weights as they are now, never updated here; its version is
the step the trainer names. The same engine, episodes, replay and chat rendering as the worker, so
what a rescue samples from it is token-for-token what the trainer's model gives.

    endpoint = serve_live(model, tokenizer, policy_id="trainer", version=0)
    endpoint.advance(trainer.state.global_step)   # after each optimiser step
    endpoint.close()
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import torch
import uvicorn
from transformers import PreTrainedTokenizerBase

from .adapters import AdaptedModel
from .limits import Limits
from .policies import Policies, Policy
from .schemas import CreatePolicy

LIVE_ADAPTER = "live"


class LiveModel(AdaptedModel):
    """The trainer's model as the worker's engine reads it: no adapters, nothing added to it."""

    def __init__(self, base: torch.nn.Module) -> None:
        super().__init__(base)
        self.model = cast(Any, base)

    def __call__(self, **kwargs: Any) -> Any:
        return self.base(**kwargs)

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        return self.base.parameters()

    def activate(self, adapter: str) -> None:
        """One set of weights: nothing to switch."""


class LivePolicies(Policies):
    """One policy over a live model; its version moves only by `advance` (which closes its episodes)."""

    trainable = False

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        policy_id: str,
        version: int,
        model_name: str,
        limits: Limits | None = None,
        tool_parser: str | None = None,
    ):
        state = Path(tempfile.mkdtemp(prefix="harness-s-live-"))
        super().__init__(
            model, tokenizer, state, limits, model_name=model_name, tool_parser=tool_parser, adapted=LiveModel(model)
        )
        self.policies[policy_id] = Policy(
            policy_id, CreatePolicy(base_model=model_name), LIVE_ADAPTER, LIVE_ADAPTER, version=version
        )
        self.policy_id = policy_id

    def advance(self, version: int) -> None:
        """The trainer's weights are now at `version`: later requests for another version are 409s,
        open episodes close and their cached keys and values (of the old weights) are dropped."""
        with self.lock:
            p = self.get(self.policy_id)
            if version == p.version:
                return
            p.version = version
            p.episodes.clear()
        self.engine.forget(f"{self.policy_id}/")


class LiveEndpoint:
    """A live policy's protocol-v2 server on a thread of this process (loopback, a port of its own)."""

    def __init__(
        self, policies: LivePolicies, server: uvicorn.Server, thread: threading.Thread, port: int, token: str | None
    ) -> None:
        self.policies, self.server, self.thread, self.token = policies, server, thread, token
        self.url = f"http://127.0.0.1:{port}"
        self.policy_id = policies.policy_id

    @property
    def version(self) -> int:
        return self.policies.get(self.policy_id).version

    def advance(self, version: int) -> None:
        self.policies.advance(version)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_live(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    policy_id: str = "trainer",
    version: int = 0,
    model_name: str = "trainer-model",
    token: str | None = None,
    tool_parser: str | None = None,
    ready_timeout_s: float = 30.0,
) -> LiveEndpoint:
    """Serves `model` as policy `policy_id` at `version` on 127.0.0.1 (a free port) until `close()`."""
    from .server import create_app

    policies = LivePolicies(model, tokenizer, policy_id, version, model_name, tool_parser=tool_parser)
    config = uvicorn.Config(create_app(policies, token, model_name), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"live-policy-{policy_id}", daemon=True)
    thread.start()
    deadline = time.monotonic() + ready_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the live policy endpoint did not start within {ready_timeout_s:g} s")
        time.sleep(0.01)
    port = int(server.servers[0].sockets[0].getsockname()[1])
    return LiveEndpoint(policies, server, thread, port, token)
