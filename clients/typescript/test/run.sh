#!/usr/bin/env bash
# clients/typescript/test/run.sh: the TypeScript client's suite.
#
# Installs the dependencies from the committed lockfile (npm ci), checks
# lint (biome) and formatting (prettier), then runs `npm test`: tsc (the
# package into dist/, the tests into build/, strict), then node's test
# runner against the server in PGHOST/PGPORT/PGUSER (a superuser; the tests
# drop and recreate their own database, sandbox_store_ts). The extension
# must be installed. Run it through the throwaway cluster:
#
#   test/scripts/with-cluster.sh clients/typescript/test/run.sh
set -euo pipefail

cd "$(dirname "$0")/.."

command -v npm >/dev/null 2>&1 || { echo "run.sh: npm not found (install nodejs and npm: Node >= 18.17)" >&2; exit 1; }

# npm's cache lives in $HOME/.npm; use a private one if HOME is not writable.
if [ ! -w "${HOME:-/nonexistent}" ]; then
  export npm_config_cache="${TMPDIR:-/tmp}/sandbox_store_npm_cache.$(id -u)"
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

npm ci --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null
npm run --silent lint
npm run --silent format:check
npm test
