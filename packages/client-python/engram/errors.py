from __future__ import annotations


class EngramError(Exception):
    """An error answer of the server (its Error body), or a request that got no answer (status 0)."""

    def __init__(self, status: int, code: str, message: str, field: str | None, request_id: str | None,
                 retry_after: float | None = None) -> None:
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
        """Seconds the server asked to wait (Retry-After), on 429 and 503."""

    def __repr__(self) -> str:
        return f"EngramError(status={self.status}, code={self.code!r}, field={self.field!r}, request_id={self.request_id!r}, message={self.message!r})"
