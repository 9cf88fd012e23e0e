import pytest
from fastapi.testclient import TestClient

from harness_s_worker.server import build, create_app


@pytest.fixture()
def client(tmp_path):
    policies, name = build("tiny", tmp_path, "cpu")
    with TestClient(create_app(policies, token="t0k", model_name=name)) as c:
        c.headers["authorization"] = "Bearer t0k"
        c.policies = policies
        yield c


SPEC = {"base_model": "tiny", "lora": {"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj"]}, "seed": 1}
TOOLS = [{"type": "function", "function": {"name": "submit", "description": "answer", "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}}}}]
