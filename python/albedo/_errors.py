"""The one exception the binding raises: :class:`Error`."""

from __future__ import annotations

from typing import Any, Literal, Optional

Outcome = Literal["not_run", "unknown"]


class Error(Exception):
    """Anything that went wrong, from the daemon or on the way to it.

    ``code`` is stable (``ALBEDO_NOT_FOUND``, ``ALBEDO_NEEDS_SIGN_IN``,
    ``ALBEDO_DAEMON_UNREACHABLE``, ...): match on it, never on the message.
    ``outcome`` says whether a call ran: ``"not_run"`` when nothing was done
    (safe to try again), ``"unknown"`` when it may have run (inspect before
    acting again; the binding never retries a call), ``None`` for errors
    that are not about a call's effect. ``status`` is the HTTP status when
    the daemon answered, ``path`` the field at fault, ``data`` the daemon's
    details (the names meant, the argument at fault).
    """

    code: str
    outcome: Optional[Outcome]
    status: Optional[int]
    path: Optional[list[Any]]
    data: Any

    def __init__(
        self,
        code: str,
        message: str,
        *,
        outcome: Optional[Outcome] = None,
        status: Optional[int] = None,
        path: Optional[list[Any]] = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.outcome = outcome
        self.status = status
        self.path = path
        self.data = data

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"albedo.Error({self.code!r}, {self.message!r}, outcome={self.outcome!r}, status={self.status!r})"

    def __reduce__(self) -> Any:
        # Picklable (multiprocessing, concurrent.futures), keyword fields included.
        return (_rebuild, (self.code, self.message, self.outcome, self.status, self.path, self.data))


def _rebuild(code: str, message: str, outcome: Optional[Outcome], status: Optional[int], path: Any, data: Any) -> Error:
    return Error(code, message, outcome=outcome, status=status, path=path, data=data)


def from_answer(status: int, body: Any) -> Error:
    """The error a daemon's non-2xx answer describes (``{"error": {code, message, path?, outcome?, data?}}``)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("code"), str):
        return Error("ALBEDO_INVALID_RESPONSE", f"the daemon answered HTTP {status} without an error body", status=status)
    outcome = err.get("outcome")
    if outcome not in ("not_run", "unknown"):
        # A refusal (4xx) did nothing; anything else may have, unless the daemon said otherwise.
        outcome = "not_run" if 400 <= status < 500 else "unknown"
    path = err.get("path")
    return Error(
        err["code"],
        str(err.get("message", "")),
        outcome=outcome,
        status=status,
        path=path if isinstance(path, list) else None,
        data=err.get("data"),
    )
