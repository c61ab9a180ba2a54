from __future__ import annotations


class EngramError(Exception):
    """An error answer of the server (its Error body), or a request that got no answer (status 0).
    The common statuses have their own subclasses (NotFoundError, RateLimitError...)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None,
        request_id: str | None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        """HTTP status; 0 when no answer arrived (network error, timeout)."""
        self.code = code
        """The server's machine-readable code (validation_error, not_found, rate_limited...), or network_error / timeout."""
        self.message = message
        self.field = field
        """The offending field, on validation errors."""
        self.request_id = request_id
        """The server's request id: quote it when reporting a problem."""
        self.retry_after = retry_after
        """Seconds the server asked to wait (Retry-After), on 429, 503 and 409 idempotency_in_progress."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, field={self.field!r}, request_id={self.request_id!r}, message={self.message!r})"


class ValidationError(EngramError):
    """400: the request is invalid; `field` names the offending field."""


class AuthenticationError(EngramError):
    """401: missing, invalid or expired credentials."""


class PermissionError(EngramError):  # noqa: A001 - the name the other official client uses; engram.PermissionError
    """403: the credential lacks the scope, role or project access."""


class NotFoundError(EngramError):
    """404: absent, or outside the caller's scope."""


class ConflictError(EngramError):
    """409: conflicts with the current state (or the same Idempotency-Key is in flight)."""


class RateLimitError(EngramError):
    """429: rate limited or a quota used up; `retry_after` says how long to wait."""


ERROR_CLASSES: dict[int, type[EngramError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
}


def error_for(
    status: int, code: str, message: str, field: str | None, request_id: str | None, retry_after: float | None = None
) -> EngramError:
    """The EngramError (subclass) for an answer's status."""
    return ERROR_CLASSES.get(status, EngramError)(status, code, message, field, request_id, retry_after)
