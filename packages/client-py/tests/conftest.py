"""The client's tests run without torch, verl or SkyRL: a service is httpx's MockTransport (or the
local stack, from the TypeScript side), the frameworks are framework_types.py's stand-ins."""

import pytest
from framework_types import install_stand_ins


@pytest.fixture()
def frameworks(monkeypatch: pytest.MonkeyPatch):
    """verl's and SkyRL's modules as the stand-ins, where the converters look for them."""
    return install_stand_ins(monkeypatch)
