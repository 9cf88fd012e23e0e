"""What the client raises: always a `HarnessSError` with a stable `code`, the HTTP `status` (0 when
no answer came) and the message. The service's own codes come through as it sent them
(`STALE_POLICY_VERSION`, `BUDGET_EXCEEDED`, `URL_NOT_ALLOWED` …); the client adds its own for
what happened on its side of the wire."""

from __future__ import annotations

from typing import Any

#: The client's own codes (the service's are its `{"error": {"code"}}`).
CONNECTION_FAILED = "CONNECTION_FAILED"
TIMEOUT = "TIMEOUT"
RESCUE_TIMEOUT = "RESCUE_TIMEOUT"
#: A run ended `failed` (the service records its error's message, not a code of its own).
EXPERIMENT_FAILED = "EXPERIMENT_FAILED"
EXPERIMENT_TIMEOUT = "EXPERIMENT_TIMEOUT"
UNKNOWN = "UNKNOWN"


class HarnessSError(Exception):
    """The service refused or failed a call, or no answer came: its stable `code`, HTTP `status`
    (0 without an answer) and `message`; `details` holds the error body's other fields."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.details: dict[str, Any] = details or {}


class HarnessSConnectionError(HarnessSError):
    """No answer: the connection could not be made or dropped (after the retries a call is allowed)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, CONNECTION_FAILED, message)


class HarnessSTimeoutError(HarnessSError, TimeoutError):
    """A call, or a wait for a rescue, took longer than it was given."""

    def __init__(self, message: str, code: str = TIMEOUT) -> None:
        super().__init__(0, code, message)


class RescueFailedError(HarnessSError):
    """A rescue slot will never be stored: the code and reason the service recorded for it (the
    first such slot), and the whole `rescue` status as read then (`status` 0: the read itself
    succeeded; a slot's failure has no HTTP status of its own)."""

    def __init__(self, rescue: dict[str, Any]) -> None:
        first = rescue["failed"][0]
        super().__init__(
            0,
            str(first.get("code", UNKNOWN)),
            f"rescue {rescue['job']['id']} slot {first.get('index')}: {first.get('reason', '')}",
            {"failed": rescue["failed"]},
        )
        self.rescue = rescue


class ExperimentFailedError(HarnessSError):
    """An experiment ended `failed`: code `EXPERIMENT_FAILED`, the run's recorded `error` as the
    message, and the whole `experiment` status as read then (`status` 0: the read succeeded)."""

    def __init__(self, experiment: dict[str, Any]) -> None:
        reason = experiment.get("error") or "no reason recorded"
        super().__init__(0, EXPERIMENT_FAILED, f"experiment {experiment['id']} failed: {reason}")
        self.experiment = experiment


def error_of(status: int, body: Any, text: str) -> HarnessSError:
    """The error an answer of `status` carries (`{"error": {"code", "message", …}}`), or UNKNOWN with its text."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return HarnessSError(status, UNKNOWN, text[:200])
    details = {k: v for k, v in err.items() if k not in ("code", "message")}
    return HarnessSError(status, str(err.get("code", UNKNOWN)), str(err.get("message", "")), details)
