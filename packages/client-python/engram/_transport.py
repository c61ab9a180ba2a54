"""Requests for one plane: URL building, headers, timeouts, retries and error mapping, sync and async."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from ._operations import OPERATIONS
from .errors import EngramError, error_for
from .models import parse_result

RETRIED_STATUSES = {429, 503}


def retried(failure: EngramError) -> bool:
    """429, 503, and a 409 saying the same Idempotency-Key is still running: its answer is stored soon, or its claim taken over."""
    return failure.status in RETRIED_STATUSES or failure.code == "idempotency_in_progress"


SCOPING_HEADERS = {
    "project_id": "x-project-id",
    "end_user_id": "x-end-user-id",
    "tenant_id": "x-tenant-id",
    "organization_id": "x-organization-id",
}
# Per-call settings; every other keyword argument of a method is a query parameter of its operation.
OPTIONS = set(SCOPING_HEADERS) | {"idempotency_key", "timeout", "headers"}


@dataclass
class Settings:
    base_url: str
    timeout: float = 30.0
    """Seconds a call may take in all, retries and their waits included: an attempt gets what is left, and a
    retry whose wait (Retry-After included) would end past it is not made."""
    max_retries: int = 3
    """Retries after the first attempt on 429, 503, 409 idempotency_in_progress and network errors, within the timeout (0: off)."""
    retry_base: float = 0.25
    """The first backoff in seconds, doubled per retry, with jitter."""
    max_retry_delay: float = 30.0
    """The longest wait between attempts, Retry-After included."""
    on_request: Callable[[dict[str, Any]], None] | None = None
    """Called before every attempt with operation_id, method, url and attempt (logging, metrics)."""
    defaults: dict[str, str | None] = field(default_factory=dict)


@dataclass
class Prepared:
    operation_id: str
    method: str
    url: str
    headers: dict[str, str]
    content: Any
    files: Any
    timeout: float
    retriable: bool


def new_idempotency_key() -> str:
    return f"engram-client-{uuid.uuid4()}"


def prepare(
    settings: Settings,
    operation_id: str,
    *,
    path: dict[str, Any] | None = None,
    body: Any = None,
    content: Any = None,
    content_type: str | None = None,
    files: Any = None,
    **params: Any,
) -> Prepared:
    """Splits a method's keyword arguments into query parameters and per-call options, and builds the request."""
    operation = OPERATIONS[operation_id]
    options = {**{k: v for k, v in settings.defaults.items() if v is not None}}
    query: dict[str, Any] = {}
    for name, value in params.items():
        if name in operation.query:
            query[name] = value
        elif name in OPTIONS:
            options[name] = value
        else:
            raise TypeError(
                f"{operation_id} takes no argument {name!r} (query: {', '.join(operation.query) or 'none'})"
            )
    url = settings.base_url.rstrip("/") + _fill(operation.path, path or {})
    pairs = [
        (k, str(v).lower() if isinstance(v, bool) else str(v))
        for k, value in query.items()
        if value is not None
        for v in (value if isinstance(value, (list, tuple)) else [value])
    ]
    if pairs:
        url += "?" + str(httpx.QueryParams(pairs))
    headers = {"accept": "application/json"}
    for name, header in SCOPING_HEADERS.items():
        if options.get(name) is not None:
            headers[header] = str(options[name])
    if body is not None:
        content = json.dumps(body, default=_json_of)
        content_type = "application/json"
    if content_type:
        headers["content-type"] = content_type
    # A stream can be sent once only; bytes, text and forms may be sent again.
    replayable = content is None or isinstance(content, (bytes, str))
    # A write the server records an Idempotency-Key for; a read sent as POST is retried without one.
    write = operation.idempotent
    key = options.get("idempotency_key")
    if key is None and write and settings.max_retries > 0 and replayable:
        key = new_idempotency_key()
    if key is not None:
        headers["idempotency-key"] = key
    headers.update(options.get("headers") or {})
    return Prepared(
        operation_id,
        operation.method,
        url,
        headers,
        content,
        files,
        options.get("timeout") or settings.timeout,
        replayable and (not write or key is not None),
    )


def _json_of(value: Any) -> Any:
    """An answer's model passed back in a body (read the ontology, change it, replace it) as the JSON it came from."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _fill(path: str, values: dict[str, Any]) -> str:
    out = path
    for name, value in values.items():
        out = out.replace("{" + name + "}", quote(str(value), safe=""))
    if "{" in out:
        raise TypeError(f"missing path parameter in {path}")
    return out


def backoff(settings: Settings, attempt: int) -> float:
    """Exponential backoff with jitter: a random wait between half and all of retry_base * 2^attempt."""
    ceiling = min(settings.max_retry_delay, settings.retry_base * 2**attempt)
    return ceiling / 2 + random.random() * ceiling / 2


def wait_before_retry(settings: Settings, attempt: int, error: EngramError) -> float:
    if error.retry_after is not None:
        return min(error.retry_after, settings.max_retry_delay)
    return backoff(settings, attempt)


def error_of(response: httpx.Response) -> EngramError:
    retry_after: float | None = None
    header = response.headers.get("retry-after")
    if header is not None:
        try:
            retry_after = max(0.0, float(header))
        except ValueError:
            try:
                retry_after = max(0.0, parsedate_to_datetime(header).timestamp() - time.time())
            except (TypeError, ValueError):
                retry_after = None
    request_id = response.headers.get("x-request-id")
    try:
        error = response.json()["error"]
        return error_for(
            response.status_code,
            error["code"],
            error["message"],
            error.get("field"),
            error.get("request_id", request_id),
            retry_after,
        )
    except (ValueError, KeyError, TypeError):
        return error_for(
            response.status_code, f"http_{response.status_code}", response.text[:200], None, request_id, retry_after
        )


def network_error(request: Prepared, error: Exception) -> EngramError:
    timed_out = isinstance(error, httpx.TimeoutException)
    message = f"{request.method} {request.url} timed out" if timed_out else f"{request.method} {request.url}: {error}"
    return EngramError(0, "timeout" if timed_out else "network_error", message, None, None)


def remaining(deadline: float) -> float:
    """Seconds left before the call's deadline (time.monotonic), at least a little for the last attempt."""
    return max(0.001, deadline - time.monotonic())


def retry_allowed(request: Prepared, settings: Settings, attempt: int, wait: float, deadline: float) -> bool:
    """Whether to retry after `wait` seconds: a wait ending past the deadline could only end in a timeout."""
    return request.retriable and attempt < settings.max_retries and time.monotonic() + wait < deadline


def parse(response: httpx.Response) -> Any:
    return response.json() if response.content else None


class SyncTransport:
    """Blocking requests (httpx.Client). `headers` gives the credentials; `renew` is tried once after a 401."""

    def __init__(
        self,
        settings: Settings,
        headers: Callable[[], dict[str, str]],
        renew: Callable[[], bool] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.settings = settings
        self._headers = headers
        self._renew = renew
        self.http = http or httpx.Client()

    def close(self) -> None:
        self.http.close()

    def call(self, operation_id: str, **kwargs: Any) -> Any:
        """The answer as its model (engram.models)."""
        return parse_result(operation_id, parse(self.send(operation_id, **kwargs)))

    def send(self, operation_id: str, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        request = prepare(self.settings, operation_id, **kwargs)
        renewed = False
        attempt = 0
        deadline = time.monotonic() + request.timeout
        while True:
            if self.settings.on_request:
                self.settings.on_request(
                    {"operation_id": operation_id, "method": request.method, "url": request.url, "attempt": attempt}
                )
            try:
                built = self.http.build_request(
                    request.method,
                    request.url,
                    headers={**self._headers(), **request.headers},
                    content=request.content,
                    files=request.files,
                    timeout=remaining(deadline),
                )
                response = self.http.send(built, stream=stream)
            except httpx.TransportError as error:
                failure = network_error(request, error)
                wait = backoff(self.settings, attempt)
                if failure.code == "timeout" or not retry_allowed(request, self.settings, attempt, wait, deadline):
                    raise failure from error
                time.sleep(wait)
                attempt += 1
                continue
            if response.is_success:
                return response
            if stream:
                response.read()
            failure = error_of(response)
            if response.status_code == 401 and not renewed and self._renew is not None:
                renewed = True
                if self._renew():
                    continue
            wait = wait_before_retry(self.settings, attempt, failure)
            if not retried(failure) or not retry_allowed(request, self.settings, attempt, wait, deadline):
                raise failure
            time.sleep(wait)
            attempt += 1

    def pages(self, operation_id: str, **kwargs: Any) -> Iterator[Any]:
        """Every item of a paginated list, page after page (offset and limit), while has_next."""
        offset = kwargs.pop("offset", 0) or 0
        while True:
            page = self.call(operation_id, offset=offset, **kwargs)
            yield from page["items"]
            if not page["has_next"] or not page["items"]:
                return
            offset += len(page["items"])

    def cursor_pages(self, operation_id: str, **kwargs: Any) -> Iterator[Any]:
        """Every item of a cursor-paginated list (GET /memory), following next_cursor while has_next."""
        while True:
            page = self.call(operation_id, **kwargs)
            yield from page["items"]
            if not page["has_next"] or page["next_cursor"] is None:
                return
            kwargs["cursor"] = page["next_cursor"]

    def download(self, operation_id: str, **kwargs: Any) -> Iterator[bytes]:
        """The bytes of a download, chunk by chunk; a lost connection resumes with a Range request."""
        received, etag, resumed = 0, None, 0
        headers = kwargs.pop("headers", None) or {}
        while True:
            extra = {"range": f"bytes={received}-", **({"if-range": etag} if etag else {})} if received else {}
            response = self.send(operation_id, stream=True, headers={**headers, **extra}, **kwargs)
            try:
                if received and response.status_code != 206:
                    raise EngramError(
                        0, "network_error", "The download was interrupted and the artifact changed since", None, None
                    )
                etag = etag or response.headers.get("etag")
                for chunk in response.iter_bytes():
                    received += len(chunk)
                    yield chunk
                return
            except httpx.TransportError:
                if resumed >= self.settings.max_retries:
                    raise
                resumed += 1
            finally:
                response.close()


class AsyncTransport:
    """Non-blocking requests (httpx.AsyncClient), with the same behaviour as SyncTransport."""

    def __init__(
        self,
        settings: Settings,
        headers: Callable[[], Awaitable[dict[str, str]]],
        renew: Callable[[], Awaitable[bool]] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = settings
        self._headers = headers
        self._renew = renew
        self.http = http or httpx.AsyncClient()

    async def close(self) -> None:
        await self.http.aclose()

    async def call(self, operation_id: str, **kwargs: Any) -> Any:
        return parse_result(operation_id, parse(await self.send(operation_id, **kwargs)))

    async def send(self, operation_id: str, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        request = prepare(self.settings, operation_id, **kwargs)
        renewed = False
        attempt = 0
        deadline = time.monotonic() + request.timeout
        while True:
            if self.settings.on_request:
                self.settings.on_request(
                    {"operation_id": operation_id, "method": request.method, "url": request.url, "attempt": attempt}
                )
            try:
                built = self.http.build_request(
                    request.method,
                    request.url,
                    headers={**await self._headers(), **request.headers},
                    content=request.content,
                    files=request.files,
                    timeout=remaining(deadline),
                )
                response = await self.http.send(built, stream=stream)
            except httpx.TransportError as error:
                failure = network_error(request, error)
                wait = backoff(self.settings, attempt)
                if failure.code == "timeout" or not retry_allowed(request, self.settings, attempt, wait, deadline):
                    raise failure from error
                await asyncio.sleep(wait)
                attempt += 1
                continue
            if response.is_success:
                return response
            if stream:
                await response.aread()
            failure = error_of(response)
            if response.status_code == 401 and not renewed and self._renew is not None:
                renewed = True
                if await self._renew():
                    continue
            wait = wait_before_retry(self.settings, attempt, failure)
            if not retried(failure) or not retry_allowed(request, self.settings, attempt, wait, deadline):
                raise failure
            await asyncio.sleep(wait)
            attempt += 1

    async def pages(self, operation_id: str, **kwargs: Any) -> AsyncIterator[Any]:
        offset = kwargs.pop("offset", 0) or 0
        while True:
            page = await self.call(operation_id, offset=offset, **kwargs)
            for item in page["items"]:
                yield item
            if not page["has_next"] or not page["items"]:
                return
            offset += len(page["items"])

    async def cursor_pages(self, operation_id: str, **kwargs: Any) -> AsyncIterator[Any]:
        while True:
            page = await self.call(operation_id, **kwargs)
            for item in page["items"]:
                yield item
            if not page["has_next"] or page["next_cursor"] is None:
                return
            kwargs["cursor"] = page["next_cursor"]

    async def download(self, operation_id: str, **kwargs: Any) -> AsyncIterator[bytes]:
        received, etag, resumed = 0, None, 0
        headers = kwargs.pop("headers", None) or {}
        while True:
            extra = {"range": f"bytes={received}-", **({"if-range": etag} if etag else {})} if received else {}
            response = await self.send(operation_id, stream=True, headers={**headers, **extra}, **kwargs)
            try:
                if received and response.status_code != 206:
                    raise EngramError(
                        0, "network_error", "The download was interrupted and the artifact changed since", None, None
                    )
                etag = etag or response.headers.get("etag")
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    yield chunk
                return
            except httpx.TransportError:
                if resumed >= self.settings.max_retries:
                    raise
                resumed += 1
            finally:
                await response.aclose()
