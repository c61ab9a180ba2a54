"""The Python client's server fixture (a real `dist/main.js serve` on SQLite), reused as it is."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

_spec = importlib.util.spec_from_file_location(
    "engram_client_conftest", pathlib.Path(__file__).resolve().parents[2] / "client-python" / "tests" / "conftest.py"
)
assert _spec and _spec.loader
_client_conftest = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _client_conftest  # its dataclass looks its module up
_spec.loader.exec_module(_client_conftest)

server = _client_conftest.server
Server = _client_conftest.Server
