"""A real Engram server for the tests: `node packages/server/dist/main.js serve` on a free port with a
fresh SQLite data directory, bootstrapped with a known owner and API key."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
SERVER = REPO / "packages" / "server"
EMAIL = "owner@example.com"
PASSWORD = "correct horse battery"
API_KEY = "eng_python_client_test_key_0123456789"


@dataclass
class Server:
    url: str
    project_id: str
    api_key: str
    email: str
    password: str


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    # Compiles the server only when its sources changed since the last build (as `npm start` does).
    subprocess.run(["node", str(SERVER / "scripts" / "build-if-stale.mjs")], check=True)
    data_dir = tempfile.mkdtemp(prefix="engram-python-")
    env = {
        **os.environ,
        "ENGRAM_DATA_DIR": data_dir,
        "ENGRAM_PORT": "0",
        "ENGRAM_DATABASE_URL": "",
        "ENGRAM_BOOTSTRAP_EMAIL": EMAIL,
        "ENGRAM_BOOTSTRAP_PASSWORD": PASSWORD,
        "ENGRAM_BOOTSTRAP_API_KEY": API_KEY,
        "ENGRAM_WEBHOOK_ALLOW_HOSTS": "127.0.0.1",
        "ENGRAM_WEBHOOK_ALLOW_HTTP": "true",
        "ENGRAM_OUTBOUND_ALLOW": "127.0.0.1",
        "ENGRAM_UPLOAD_BACKGROUND_BYTES": "2048",
        "ENGRAM_RATE_LIMIT_LOGIN_MAX": "100000",
        "ENGRAM_LOG_LEVEL": "warn",
    }
    log = open(os.path.join(data_dir, "server.log"), "w+")
    process = subprocess.Popen(
        ["node", str(SERVER / "dist" / "main.js"), "serve"], env=env, stdout=subprocess.PIPE, stderr=log, text=True
    )
    try:
        # The bootstrap banner (printed once, before listening), then the address it listens on: a
        # port the OS picked (ENGRAM_PORT=0), so no other process can have taken it meanwhile.
        project_id = None
        url = None
        for line in process.stdout:
            found = re.search(r"project id:\s+(\S+)", line)
            if found:
                project_id = found.group(1)
            listening = re.match(r"engram: listening on (\S+)", line)
            if listening:
                url = listening.group(1)
                break
        assert project_id, "the server printed no bootstrap banner"
        assert url, "the server printed no listening address"
        for _ in range(600):
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            log.seek(0)
            raise RuntimeError(f"the server did not become ready:\n{log.read()}")
        yield Server(url, project_id, API_KEY, EMAIL, PASSWORD)
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)
