#!/usr/bin/env bash
# Both clients publish clean: the npm tarball of @engram/client holds its built dist/ (JavaScript and types),
# README, LICENSE, CHANGELOG and package.json only, with the metadata a registry shows; `python -m build`
# makes an sdist and a wheel of the engram package alone and leaves nothing in the source tree.
# Run from the repository's root after `npm ci` (which builds dist/).
set -euo pipefail
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

npm pack --dry-run --json --ignore-scripts -w @engram/client 2>/dev/null >"$work/pack.json"
node -e '
  const [pack] = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const meta = require("./packages/client/package.json");
  const files = pack.files.map((f) => f.path);
  const stray = files.filter((f) => !/^(dist\/.*\.(js|d\.ts)|README\.md|LICENSE|CHANGELOG\.md|package\.json)$/.test(f));
  const missing = ["dist/index.js", "dist/index.d.ts", "README.md", "LICENSE", "CHANGELOG.md"].filter((f) => !files.includes(f));
  const unset = ["license", "repository", "homepage", "keywords", "exports", "files"].filter((k) => !meta[k]);
  const types = pack.files.find((f) => f.path === "dist/generated/openapi.d.ts")?.size ?? 0;
  console.log(`npm pack @engram/client: ${files.length} files, ${pack.size} bytes packed, ${pack.unpackedSize} unpacked (OpenAPI types ${types})`);
  if (stray.length || missing.length || unset.length) {
    console.log({ stray, missing, unset });
    process.exit(1);
  }
' "$work/pack.json"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --retries 0 --timeout 10 build hatchling 2>&1 | grep -v '^WARNING: Location' || true
"$work/venv/bin/python" -m build --no-isolation --outdir "$work/dist" packages/client-python >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; exit 1; }
"$work/venv/bin/python" - "$work/dist" <<'PY'
import pathlib, sys, tarfile, zipfile
dist = pathlib.Path(sys.argv[1])
wheel, = dist.glob("*.whl")
sdist, = dist.glob("*.tar.gz")
in_wheel = zipfile.ZipFile(wheel).namelist()
in_sdist = [name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name]
stray = [n for n in in_wheel if not n.startswith(("engram/", "engram-"))] + \
        [n for n in in_sdist if not (n.startswith("engram/") or n in {"pyproject.toml", "PKG-INFO", "README.md", "LICENSE", "CHANGELOG.md", ".gitignore"})] + \
        [n for n in in_wheel + in_sdist if "__pycache__" in n or n.endswith(".pyc")]
metadata = zipfile.ZipFile(wheel).read(next(n for n in in_wheel if n.endswith(".dist-info/METADATA"))).decode()
unset = [f for f in ("License-Expression:", "Project-URL: Repository", "Classifier:", "Keywords:", "Description-Content-Type: text/markdown") if f not in metadata]
print(f"python -m build: {wheel.name} ({len(in_wheel)} files), {sdist.name} ({len(in_sdist)} files)")
if stray or unset or "engram/py.typed" not in in_wheel:
    sys.exit(f"stray files: {stray}; metadata missing: {unset}")
PY
left=$(git status --porcelain --ignored -- packages/client-python | grep -E '(build|dist|\.egg-info)/' || true)
if [ -n "$left" ]; then echo "the Python build left files in the source tree:"; echo "$left"; exit 1; fi
