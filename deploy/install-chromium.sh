#!/usr/bin/env bash
# Installs Debian's Chromium for the console's browser tests (test/console/) and the
# console benchmark (bench/console.ts) when it is missing: the project drives the
# system's Chromium through playwright-core and never downloads a browser of its own.
# Needs root (apt-get); prints the browser's path. CHROMIUM_PATH names another binary.
set -euo pipefail
bin="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$bin" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || {
    apt-get update >/dev/null 2>&1
    apt-get install -y --no-install-recommends chromium >/dev/null
  }
fi
"$bin" --version >/dev/null 2>&1 || { echo "$bin does not run" >&2; exit 1; }
echo "$bin"
