"""The package README's example, run as written against a real server."""

import os
import pathlib
import re
import subprocess
import sys

README = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()


def example_after(heading: str, language: str) -> str:
    section = README[README.index(heading) :]
    found = re.search(r"```" + language + r"\n(.*?)```", section, re.S)
    assert found, f"no {language} example after {heading}"
    return found.group(1)


def test_readme_python_example_runs_as_written(server):
    env = {**os.environ, "ENGRAM_URL": server.url, "ENGRAM_API_KEY": server.api_key}
    # The bootstrap key is locked to its project, as in the README's quick start.
    done = subprocess.run(
        [sys.executable, "-c", example_after("## Example: typed answers, typed errors", "python")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # The answer, then the ValidationError and the NotFoundError caught by their classes.
    answer, invalid, gone = done.stdout.strip().split("\n")
    assert (answer, invalid) == ("Prefers aisle seats on long flights", "invalid: text") and gone.startswith(
        "gone: req"
    )
