"""The names the worker's vLLM- and SGLang-shaped routes serve a policy under (no torch here: the
launcher reads `CHAT_PROMPTS` before the model loads).

Neither server's replies name a weight version, so the version travels in the served name, as a
trainer serving each step as its own LoRA adapter (or `--served-model-name`) would name it: a
policy is served as `<policy id>` (sampled at the version it is at) and as `<policy id>@v<N>`
(sampled at exactly version N). The worker holds one version of a policy, its published one, so
`<policy id>@v<N>` for any other N is a model it does not serve: vLLM's 404 for an unknown model,
SGLang's 400 for an adapter that is not loaded. A reply's `model` is the name requested."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import WorkerError

if TYPE_CHECKING:
    from .policies import Policies, Policy

#: How `/v1/chat/completions` builds a prompt (`--chat-prompts`): `episode` continues the episode
#: a conversation came from; `render` renders every request's messages whole, as vLLM does.
CHAT_PROMPTS = ("episode", "render")


class NotServed(Exception):
    """A name the worker serves no model under: an unknown policy, or a version it does not hold."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class ServedName:
    name: str
    policy_id: str
    #: The version the name pins (`@v<N>`), or None: the version the policy is at.
    version: int | None


def parse_name(name: str) -> ServedName:
    """`<policy>` or `<policy>@v<N>`; a `@v` suffix that is not a version number is a 400."""
    pid, pinned, v = name.partition("@v")
    if pinned and not v.isdigit():
        raise WorkerError(400, "VALIDATION_FAILED", f"model: {name!r} is <policy> or <policy>@v<version number>")
    return ServedName(name, pid, int(v) if pinned else None)


def resolve(policies: Policies, name: str) -> tuple[ServedName, Policy]:
    """The policy a served name samples, checked now (and again when its turn starts)."""
    served = parse_name(name)
    p = policies.find(served.policy_id)
    if p is None or (served.version is not None and served.version != p.version):
        raise NotServed(name)
    return served, p
