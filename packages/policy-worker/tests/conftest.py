import pytest
import torch
from fastapi.testclient import TestClient

from harness_s_worker.server import build, create_app

# The tiny model, as the worker itself runs it (threads.py): more threads only spin beside the rest of the test suite.
torch.set_num_threads(1)


@pytest.fixture()
def client(tmp_path):
    policies, name = build("tiny", tmp_path, "cpu")
    with TestClient(create_app(policies, token="t0k", model_name=name)) as c:
        c.headers["authorization"] = "Bearer t0k"
        c.policies = policies
        yield c


SPEC = {"base_model": "tiny", "lora": {"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj"]}, "seed": 1}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "answer",
            "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}},
        },
    }
]


def datum_from(sample, advantage, sample_id="s0"):
    """The datum of one sampled turn: mask 1 on the completion, its behaviour log-probabilities."""
    prompt, comp = sample["prompt_ids"], sample["completion"]
    ids = prompt + comp["ids"]
    return {
        "sample_id": sample_id,
        "group_id": "g",
        "ids": ids,
        "loss_mask": [0] * len(prompt) + [1] * len(comp["ids"]),
        "behaviour_logprobs": [0.0] * len(prompt) + comp["logprobs"],
        "advantage": advantage,
    }
