"""Retries against a proxy in front of the real server that answers 429 or 503 first, resets the
connection, or loses the server's answer on the way back."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
import time
from typing import Any

import httpx
import pytest
from engram import AsyncServiceClient, EngramError, RateLimitError, ServiceClient


class Proxy(http.server.ThreadingHTTPServer):
    def __init__(self, target: str) -> None:
        self.faults: list[str] = []
        self.seen: list[dict[str, Any]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                proxy.seen.append(
                    {"method": self.command, "path": self.path, "key": self.headers.get("idempotency-key")}
                )
                fault = proxy.faults.pop(0) if proxy.faults else None
                if fault in ("429", "429-wait-20s", "503"):
                    code = "unavailable" if fault == "503" else "rate_limited"
                    payload = (
                        f'{{"error":{{"code":"{code}","message":"try again","request_id":"req_proxy"}}}}'
                    ).encode()
                    self.send_response(503 if fault == "503" else 429)
                    self.send_header("content-type", "application/json")
                    self.send_header("retry-after", "20" if fault == "429-wait-20s" else "0")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault in ("409-in-progress", "409-conflict"):
                    code = "conflict" if fault == "409-conflict" else "idempotency_in_progress"
                    payload = (
                        f'{{"error":{{"code":"{code}","message":"in flight","request_id":"req_proxy"}}}}'
                    ).encode()
                    self.send_response(409)
                    self.send_header("content-type", "application/json")
                    self.send_header("retry-after", "0")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "hang":  # no answer within the client's timeout
                    time.sleep(2)
                    self.close_connection = True
                    return
                if fault == "reset":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                skip = {"host", "content-length", "connection"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                answer = httpx.request(self.command, target + self.path, headers=headers, content=body or None)
                if fault == "lose-answer":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = handle_one

            def log_message(self, *_: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def proxy(server):
    p = Proxy(server.url)
    yield p
    p.shutdown()


def client(server, proxy, **settings: Any) -> ServiceClient:
    return ServiceClient(
        proxy.url, server.api_key, project_id=server.project_id, end_user_id="dora", retry_base=0.001, **settings
    )


def count(server, text: str) -> int:
    with ServiceClient(server.url, server.api_key, project_id=server.project_id, end_user_id="dora") as direct:
        return sum(1 for m in direct.memories.export()["memories"] if m["text"] == text)


def test_a_write_answered_429_then_503_is_retried_with_one_idempotency_key_and_written_once(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["429", "503"]
    with client(server, proxy) as c:
        assert c.memories.add({"text": "Retried in Python"})["text"] == "Retried in Python"
    assert len(proxy.seen) == 3
    assert len({s["key"] for s in proxy.seen}) == 1 and proxy.seen[0]["key"].startswith("engram-client-")
    assert count(server, "Retried in Python") == 1


def test_409_idempotency_in_progress_is_retried_with_the_same_key_and_a_plain_conflict_is_not(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["409-in-progress", "409-in-progress"]
    with client(server, proxy) as c:
        assert (
            c.memories.add({"text": "Retried while in progress in Python"})["text"]
            == "Retried while in progress in Python"
        )
    assert len(proxy.seen) == 3 and len({s["key"] for s in proxy.seen}) == 1
    proxy.faults[:] = ["409-conflict"]
    with client(server, proxy) as c, pytest.raises(EngramError) as caught:
        c.memories.add({"text": "A plain conflict in Python"})
    assert (caught.value.status, caught.value.code) == (409, "conflict")
    assert count(server, "Retried while in progress in Python") == 1


def test_a_lost_answer_is_replayed_not_written_twice(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["lose-answer"]
    with client(server, proxy) as c:
        c.memories.add({"text": "Answer lost in Python"})
    assert len(proxy.seen) == 2 and proxy.seen[0]["key"] == proxy.seen[1]["key"]
    assert count(server, "Answer lost in Python") == 1


def test_reads_survive_a_reset_and_retries_stop_at_max_retries(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["reset"]
    with client(server, proxy) as c:
        assert c.health.live()["status"] == "ok"
    assert len(proxy.seen) == 2

    proxy.seen.clear()
    proxy.faults[:] = ["503", "503", "503"]
    with client(server, proxy, max_retries=2) as c, pytest.raises(EngramError) as caught:
        c.memories.query({"query": "anything"})
    error = caught.value
    assert (error.status, error.code, error.request_id, error.retry_after) == (503, "unavailable", "req_proxy", 0)
    assert len(proxy.seen) == 3
    # A read sent as POST is retried without an Idempotency-Key: the server records none for it.
    assert [(s["method"], s["key"]) for s in proxy.seen] == [("POST", None)] * 3


def test_without_retries_a_write_carries_no_key_and_fails_at_once(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["503"]
    with client(server, proxy, max_retries=0) as c, pytest.raises(EngramError) as caught:
        c.memories.add({"text": "Not retried in Python"})
    assert caught.value.status == 503
    assert [s["key"] for s in proxy.seen] == [None]
    assert count(server, "Not retried in Python") == 0


def test_add_many_reports_a_failed_batch_and_goes_on(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["pass", "503", "pass"]  # the second of three bulk-add requests is refused
    with client(server, proxy, max_retries=0) as c:
        outcome = c.memories.add_many([{"text": f"Python batch item {i}"} for i in range(120)])
    assert len(proxy.seen) == 3
    assert outcome["totals"] == {"created": 70, "skipped": 0, "failed": 50}
    assert [r["index"] for r in outcome["results"] if r["status"] == "failed"] == list(range(50, 100))
    assert outcome["results"][50]["error"]["code"] == "unavailable"
    assert count(server, "Python batch item 60") == 0 and count(server, "Python batch item 110") == 1


def test_an_attempt_times_out(server, proxy):
    proxy.faults[:] = ["hang"]
    with client(server, proxy, max_retries=0, timeout=0.2) as c, pytest.raises(EngramError) as caught:
        c.health.live()
    assert (caught.value.status, caught.value.code) == (0, "timeout")


def test_the_timeout_bounds_the_whole_call_and_a_retry_after_past_it_fails_at_once(server, proxy):
    proxy.seen.clear()
    proxy.faults[:] = ["429-wait-20s"]
    with client(server, proxy, timeout=2, max_retry_delay=60) as c, pytest.raises(RateLimitError) as caught:
        c.memories.add({"text": "Never waits 20 s"})
    assert (caught.value.status, caught.value.retry_after) == (429, 20) and isinstance(caught.value, EngramError)
    assert len(proxy.seen) == 1
    proxy.faults[:] = ["429"]
    with client(server, proxy, timeout=10) as c:
        assert c.memories.add({"text": "Retried within the deadline"})["text"] == "Retried within the deadline"


def test_the_async_client_retries_the_same_way(server, proxy):
    async def scenario() -> None:
        async with AsyncServiceClient(
            proxy.url, server.api_key, project_id=server.project_id, end_user_id="dora", retry_base=0.001
        ) as c:
            await c.memories.add({"text": "Retried asynchronously"})

    proxy.seen.clear()
    proxy.faults[:] = ["503", "lose-answer"]
    asyncio.run(scenario())
    assert len(proxy.seen) == 3 and len({s["key"] for s in proxy.seen}) == 1
    assert count(server, "Retried asynchronously") == 1
