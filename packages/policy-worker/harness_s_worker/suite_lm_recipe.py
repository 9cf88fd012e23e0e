"""The suite LM's recipe and the hash its cache is keyed on: light enough (no torch) that a
cached ask answers without importing the model stack."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

SIZES = {
    # name: (hidden, layers, heads, intermediate)
    "toy": (32, 1, 2, 64),
    "small": (128, 4, 4, 384),
    "base": (256, 6, 8, 768),
    "large": (512, 8, 8, 1536),
}


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    seed: int = 0
    size: str = Field("small", pattern="^(" + "|".join(SIZES) + ")$")
    vocab_size: int = Field(1024, ge=300, le=65536)
    context: int = Field(2048, ge=128, le=32768)
    epochs: int = Field(3, ge=0, le=100)
    lr: float = Field(3e-3, gt=0, le=1)
    batch_tokens: int = Field(16384, ge=256)
    # Loss weight of a hinted turn's call (1: as any other). Weighting turns changes which states
    # the model spends its capacity on, not the distribution it imitates in each.
    hinted_weight: float = Field(1.0, ge=0, le=100)
    # Epochs on the instruction-following conversations alone before the warm start (0: none).
    instruct_epochs: int = Field(0, ge=0, le=100)


def recipe_hash(recipe: Recipe, data: bytes) -> str:
    body = json.dumps(
        {"recipe": recipe.model_dump(), "data": hashlib.sha256(data).hexdigest(), "format": 1}, sort_keys=True
    )
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def size_parameters(size: str) -> int:
    """Parameters of a size's transformer blocks (embeddings aside): enough to tell small from large."""
    hidden, layers, _heads, intermediate = SIZES[size]
    return layers * (4 * hidden * hidden + 3 * hidden * intermediate)
