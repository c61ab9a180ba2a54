#!/usr/bin/env bash
# The Python packages' tests (packages/client-python, packages/langgraph-python), part of `npm test`.
# A virtual environment under .venv is created, and brought up to date when a pyproject.toml or this script
# changed, from the pip index configured on the machine; both suites then run with pytest, each against a
# real server their fixture starts (packages/server/dist/main.js serve on SQLite, built if stale).
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."
venv=.venv
stamp="$venv/.engram-installed"
want=$(cat packages/client-python/pyproject.toml packages/langgraph-python/pyproject.toml "$self" | sha256sum | cut -d' ' -f1)

if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "test:python: installing the test environment in $venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  pip=("$venv/bin/pip" install --quiet --retries 0 --timeout 10)
  if ! {
    "${pip[@]}" -e 'packages/client-python[test]' &&
      # langgraph without its resolver: the pip mirror lacks langchain-protocol, which langchain-core requires
      # but langgraph.store.base (all that engram-langgraph imports) never loads; its other dependencies by name.
      "${pip[@]}" --no-deps -e packages/langgraph-python langgraph langgraph-checkpoint langchain-core &&
      "${pip[@]}" ormsgpack 'langsmith<1' jsonpatch packaging pyyaml tenacity uuid-utils xxhash
  } >"$venv/pip.log" 2>&1; then
    grep -v '^WARNING: Location' "$venv/pip.log"; echo "test:python: pip install failed"; exit 1
  fi
  echo "$want" >"$stamp"
fi

status=0
for package in client-python langgraph-python; do
  echo "== pytest packages/$package"
  (cd "packages/$package" && "../../$venv/bin/python" -m pytest -q -p no:cacheprovider) || status=1
done
exit "$status"
