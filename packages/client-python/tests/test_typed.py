"""Answers are pydantic models of the document's named schemas: attributes, unknown fields kept, and types
that mypy checks in a caller's code (a typo in a field name fails it)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tempfile

from engram import ServiceClient, models
from engram.models import parse_result

PACKAGE = pathlib.Path(__file__).resolve().parents[1]

EXAMPLE = """
from engram import NotFoundError, ServiceClient, models


def main(url: str, key: str) -> str:
    with ServiceClient(url, key, end_user_id="user-42") as client:
        added = client.memories.add({"text": "Prefers aisle seats", "tags": ["travel"]})
        if isinstance(added, models.MemoriesAddResponse201):
            print(added.id, added.created_at)
        found = client.memories.query({"query": "aisle seats"})
        first: str = found.memories[0].text
        try:
            client.memories.get(123456)
        except NotFoundError as error:
            print(error.status, error.request_id)
        return first
"""


def mypy(source: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as folder:
        example = pathlib.Path(folder) / "example.py"
        example.write_text(source)
        # The package as a caller sees it once installed: its own modules are not the caller's to check.
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--follow-imports=silent",
                "--no-incremental",
                "--cache-dir",
                str(pathlib.Path(folder) / "cache"),
                str(example),
            ],
            capture_output=True,
            text=True,
            env={"MYPYPATH": str(PACKAGE), "PATH": ""},
            cwd=folder,
        )


def test_add_answers_a_model_with_attributes(server):
    with ServiceClient(server.url, server.api_key, project_id=server.project_id, end_user_id="typed") as client:
        added = client.memories.add({"text": "Typed answers for Python", "tags": ["sdk"]})
        assert isinstance(added, models.MemoriesAddResponse201)
        assert (added.text, added.tags, added.end_user_id) == ("Typed answers for Python", ["sdk"], "typed")
        assert added["text"] == added.text  # code written against dicts keeps working
        found = client.memories.query({"query": "typed answers"})
        assert isinstance(found, models.MemoriesQueryResponse)
        assert found.memories[0].id == added.id


def test_fields_the_server_adds_later_are_kept():
    answer = parse_result("health.live", {"status": "ok", "added_in_a_later_version": {"n": 1}})
    assert answer.status == "ok" and answer.model_extra == {"added_in_a_later_version": {"n": 1}}


def test_a_callers_code_type_checks_and_a_misspelt_field_does_not():
    checked = mypy(EXAMPLE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    misspelt = mypy(EXAMPLE.replace("found.memories[0].text", "found.memories[0].txt"))
    assert misspelt.returncode == 1 and '"txt"' in misspelt.stdout, misspelt.stdout
