"""The worker's one error type: an HTTP status and a stable code, as protocol v2 names them
(VALIDATION_FAILED 400, UNAUTHENTICATED 401, NOT_FOUND 404, CONFLICT / STALE_POLICY_VERSION /
UPDATE_IN_PROGRESS 409, PAYLOAD_TOO_LARGE 413, CAPACITY_EXCEEDED 429, SAMPLE_TIMEOUT 503)."""

from __future__ import annotations

from typing import Any


class WorkerError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def stale_version(held: int, wanted: int, message: str) -> WorkerError:
    """409 STALE_POLICY_VERSION stating both versions: the one the policy holds and the one the
    request wanted (for a `{"min": n}` version, n)."""
    return WorkerError(409, "STALE_POLICY_VERSION", message, held_version=held, wanted_version=wanted)


class WireError(Exception):
    """An error answered in another server's shape (vLLM's, SGLang's): the body as that server
    writes it, for the routes that speak its wire format."""

    def __init__(self, status: int, body: dict[str, Any]):
        super().__init__(str(body))
        self.status, self.body = status, body
