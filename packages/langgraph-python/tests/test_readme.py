"""The root README's LangGraph (Python) example, run as written against a real server."""

import os
import pathlib
import re
import subprocess
import sys
from typing import Any

from engram import ServiceClient

README = (pathlib.Path(__file__).resolve().parents[3] / "README.md").read_text()


def test_readme_langgraph_python_example_runs_as_written(server: Any) -> None:
    found = re.search(r"### LangGraph \(Python\).*?```python\n(.*?)```", README, re.S)
    assert found, "no Python example under ### LangGraph (Python)"
    # The bootstrap key is locked to its project, as the key `npm start` prints.
    env = {**os.environ, "ENGRAM_URL": server.url, "ENGRAM_API_KEY": server.api_key}
    done = subprocess.run([sys.executable, "-c", found.group(1)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    key, rest = done.stdout.strip().split(" ", 1)
    assert key == "seat" and rest.startswith("Prefers aisle seats on long flights 0.")
    memories = ServiceClient(server.url, server.api_key).memories.list(end_user_id="user-42").items
    assert [(m.text, m.metadata["kind"]) for m in memories] == [("Prefers aisle seats on long flights", "preference")]
