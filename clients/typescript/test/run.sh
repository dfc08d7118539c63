#!/usr/bin/env bash
# clients/typescript/test/run.sh: the TypeScript client's suite.
#
# Two lines of TanStack AI, each from its own committed lock file (npm ci):
#
# - the package's own (package-lock.json): @tanstack/ai 0.42 with
#   @tanstack/ai-sandbox 0.2.4, what the package is built and published
#   with.  Checks lint and formatting (both biome), then runs `npm
#   test`: tsc (the package into dist/, the tests into build/, strict), then
#   node's test runner.
# - test/lines/0.58 (its package.json and package-lock.json): @tanstack/ai
#   0.58, without @tanstack/ai-sandbox (whose 0.2.4 wants ai 0.42).  tsc
#   compiles the package (but the 0.42-only ./tanstack entry point) and the
#   tests of that line into test/lines/0.58/build, whose modules resolve
#   from that line's node_modules, then node's test runner runs them and the
#   line-independent run tests (runs.test.ts) again.
# - test/browser (its package.json and package-lock.json): durable chat
#   runs in a real browser.  @tanstack/ai 0.58 with @tanstack/ai-client
#   0.33, esbuild and playwright-core; tsc compiles the package, the
#   chat-resume example's balancer and model and the line's files into
#   test/browser/build, the test bundles the page (esbuild) and drives
#   Debian's chromium (/usr/bin/chromium, or SB_CHROMIUM; nothing is
#   downloaded) through two replicas behind the balancer while it kills,
#   stops and cuts them (test/README.md, "The browser line").
#
# Each runs against the server in PGHOST/PGPORT/PGUSER (a superuser; the
# tests drop and recreate their own database, sandbox_store_ts). The
# extension must be installed. SB_TS_LINES picks the lines (default
# "0.42 0.58 browser"). Run it through the throwaway cluster:
#
#   test/scripts/with-cluster.sh clients/typescript/test/run.sh
set -euo pipefail

cd "$(dirname "$0")/.."

command -v npm >/dev/null 2>&1 || { echo "run.sh: npm not found (install nodejs and npm: Node >= 18.17)" >&2; exit 1; }

# npm's cache lives in $HOME/.npm; use a private one if HOME is not writable.
if [ ! -w "${HOME:-/nonexistent}" ]; then
  npm_config_cache="${TMPDIR:-/tmp}/sandbox_store_npm_cache.$(id -u)"
  export npm_config_cache
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

ci() { npm ci --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null; }

for line in ${SB_TS_LINES:-0.42 0.58 browser}; do
  case $line in
    0.42)
      echo "== client tests, @tanstack/ai 0.42 + @tanstack/ai-sandbox 0.2.4 (package-lock.json)"
      ci
      npm run --silent lint
      npm run --silent format:check
      npm test
      ;;
    0.58)
      echo "== client tests, @tanstack/ai 0.58 (test/lines/0.58/package-lock.json)"
      # The compiler, and the package's dist/ that the tarball tests pack, come from the package's own line.
      [ -x node_modules/typescript/bin/tsc ] || ci
      npm run --silent build
      (
        cd test/lines/0.58
        ci
        rm -rf build
        node ../../../node_modules/typescript/bin/tsc -p tsconfig.json
        node build/test/setup-db.js
        node --test build/test/lines/0.58/*.test.js build/test/runs.test.js
      )
      ;;
    browser)
      echo "== client tests, browser: @tanstack/ai 0.58 + @tanstack/ai-client 0.33 in chromium (test/browser/package-lock.json)"
      [ -x node_modules/typescript/bin/tsc ] || ci
      (
        cd test/browser
        ci
        rm -rf build
        node ../../node_modules/typescript/bin/tsc -p tsconfig.json
        node build/test/setup-db.js
        node --test build/test/browser/*.test.js
      )
      ;;
    *)
      echo "run.sh: unknown line $line (0.42, 0.58 or browser)" >&2
      exit 1
      ;;
  esac
done
