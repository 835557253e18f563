#!/usr/bin/env bash
# ctest's entry for the browser test: installs playwright-core (pinned in package-lock.json)
# when node_modules is missing, then runs browser_test.mjs. ctest sets the FRUGAL_* paths.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "browser test needs node and npm (scripts/setup installs them)" >&2; exit 1; }
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] || { echo "browser test needs Debian's chromium at /usr/bin/chromium (scripts/setup installs it)" >&2; exit 1; }
if [[ ! -d node_modules/playwright-core ]]; then
  npm ci --ignore-scripts --no-audit --no-fund >&2
fi
exec node browser_test.mjs
