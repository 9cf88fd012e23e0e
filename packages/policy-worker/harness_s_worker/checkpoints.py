"""Checkpoints: the published adapter's weights, the optimizer's state and the version under
`<state>/policies/<id>/v<n>`; `init_from: "<id>/v<n>"` on a new policy (on this worker or one
sharing the state folder) restores all three, so a unit continues where it stopped."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

import torch

from .adapters import AdaptedModel
from .errors import WorkerError
from .schemas import ID, CreatePolicy


class CheckpointedPolicy(Protocol):
    """What a checkpoint saves and restores of a policy."""

    id: str
    adapter: str
    train_adapter: str
    version: int
    spec: CreatePolicy

    def optim(self) -> torch.optim.Optimizer: ...


def save_checkpoint(p: CheckpointedPolicy, adapted: AdaptedModel, state_dir: Path) -> dict[str, Any]:
    """Called with the policy table's lock held, so that the version saved is the weights saved."""
    path = state_dir / "policies" / p.id / f"v{p.version}"
    path.mkdir(parents=True, exist_ok=True)
    with adapted.lock:
        weights = {f"{i}": t.detach().cpu().clone() for i, t in enumerate(adapted.adapter_params(p.adapter))}
        torch.save(
            {
                "version": p.version,
                "spec": p.spec.model_dump(),
                "weights": weights,
                "optimizer": p.optim().state_dict(),
            },
            path / "state.pt",
        )
        # The adapter only: a LoRA on lm_head leaves the base layer as it was, and a restore needs the same base model.
        adapted.peft.save_pretrained(str(path), selected_adapters=[p.adapter], save_embedding_layers=False)
    forget_older(path.parent, p.version)
    return {"version": p.version, "path": str(path), "checkpoint": f"{p.id}/v{p.version}"}


KEEP = 2  # the newest and the one before it (a caller may have recorded either)


def forget_older(folder: Path, newest: int) -> None:
    for old in folder.glob("v*"):
        if old.name[1:].isdigit() and int(old.name[1:]) <= newest - KEEP:
            shutil.rmtree(old, ignore_errors=True)


def read_checkpoint(state_dir: Path, ref: str) -> dict[str, Any]:
    root = (state_dir / "policies").resolve()
    path = (root / ref / "state.pt").resolve()
    if root not in path.parents or not path.is_file():
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            f"init_from: no checkpoint {ref!r} in this worker's state folder (as POST …/checkpoints names it: <policy>/v<n>)",
        )
    return cast(dict[str, Any], torch.load(path, map_location="cpu", weights_only=True))


def apply_checkpoint(adapted: AdaptedModel, p: CheckpointedPolicy, saved: dict[str, Any]) -> None:
    """Called with the model lock held, on a policy just created."""
    params = adapted.adapter_params(p.adapter)
    if len(saved["weights"]) != len(params) or saved["spec"].get("lora") != p.spec.lora.model_dump():
        raise WorkerError(
            400, "VALIDATION_FAILED", "init_from: the checkpoint's adapter does not match this policy's lora settings"
        )
    with torch.no_grad():
        for i, param in enumerate(params):
            param.copy_(saved["weights"][str(i)].to(param.device))
    adapted.copy_adapter(p.adapter, p.train_adapter)
    p.optim().load_state_dict(saved["optimizer"])
    p.version = int(saved["version"])


def restore_policies(
    state_dir: Path, create: Callable[[str, CreatePolicy], tuple[CheckpointedPolicy, bool]], log: Callable[[str], None]
) -> list[str]:
    """Re-creates every policy saved in the state folder at its newest checkpoint (a worker
    restarted on the same `--state-dir` holds them again; its spec as it was created, so the
    same `PUT` finds it). A checkpoint that cannot be restored is logged and left on disk."""
    root = state_dir / "policies"
    restored: list[str] = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        versions = sorted(
            int(v.name[1:]) for v in folder.glob("v*") if v.name[1:].isdigit() and (v / "state.pt").is_file()
        )
        if not versions or not re.match(ID, folder.name):
            continue
        ref = f"{folder.name}/v{versions[-1]}"
        try:
            spec = CreatePolicy.model_validate(read_checkpoint(state_dir, ref)["spec"])
            p, _ = create(folder.name, spec.model_copy(update={"init_from": ref}))
            p.spec = spec
            restored.append(ref)
        except Exception as err:  # another model's folder, a damaged file: the others still load
            log(f"policy worker: checkpoint {ref} not restored ({type(err).__name__}: {err})")
    return restored
