from __future__ import annotations

from typing import Any

from ._transport import Settings


def transport_settings(base_url: str, defaults: dict[str, str | None], settings: dict[str, Any]) -> Settings:
    """timeout, max_retries, retry_base, max_retry_delay and on_request, as keyword arguments of a client."""
    return Settings(base_url=base_url, defaults=defaults, **settings)


class _Plane:
    """A client of one plane: its groups send operations through its transport."""

    transport: Any

    def _call(self, operation_id: str, **kwargs: Any) -> Any:
        return self.transport.call(operation_id, **kwargs)

    def _pages(self, operation_id: str, **kwargs: Any) -> Any:
        return self.transport.pages(operation_id, **kwargs)

    def _cursor_pages(self, operation_id: str, **kwargs: Any) -> Any:
        return self.transport.cursor_pages(operation_id, **kwargs)

    def call(self, operation_id: str, **kwargs: Any) -> Any:
        """Sends any operation of the document by its operationId (path=, body=, query and options as keywords)."""
        return self._call(operation_id, **kwargs)


class _Group:
    def __init__(self, client: Any) -> None:
        self._client = client

    def _call(self, operation_id: str, **kwargs: Any) -> Any:
        return self._client._call(operation_id, **kwargs)

    def _pages(self, operation_id: str, **kwargs: Any) -> Any:
        return self._client._pages(operation_id, **kwargs)
