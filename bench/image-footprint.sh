#!/usr/bin/env bash
# The image's production node_modules and its cold start, without a Docker engine
# (docs/performance.md "Image footprint and cold start"). In a temporary directory it
# installs the way deploy/Dockerfile does (npm ci --ignore-scripts, the patches of
# patches/, npm prune --omit=dev), assembles the runtime stage's /app (package.json,
# that node_modules, this checkout's dist/ (the shipped build, its SQL embedded) and
# console/dist), prints the size of node_modules, and then starts
# `node dist/psync.cjs all` RUNS times on the embedded default, each time on a fresh
# DATA_DIR and again on the same one, timing spawn to the first `GET /readyz` 200.
#
# Usage: npm run build && bash bench/image-footprint.sh [RUNS=3]
# KEEP=1 leaves the temporary directory (its path is printed) for a second look.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
test -f dist/psync.cjs || { echo "no dist/psync.cjs: run npm run build first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/psync-footprint-XXXXXX")
[ "${KEEP:-0}" = 1 ] && echo "work: $work" || trap 'rm -rf "$work"' EXIT

app="$work/app"
mkdir -p "$app"
cp package.json package-lock.json "$app/"
[ -d patches ] && cp -R patches "$app/patches"
(cd "$app" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1)
if [ -d "$app/patches" ]; then (cd "$app" && npx --no-install patch-package --error-on-fail --error-on-warn >/dev/null); fi
(cd "$app" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null 2>&1)
rm -rf "$app/patches"
echo "node_modules (production): $(du -sh "$app/node_modules" | cut -f1) on disk, $(du -sh --apparent-size "$app/node_modules" | cut -f1) apparent," \
  "$(cd "$app" && npm ls --omit=dev --all --parseable 2>/dev/null | tail -n +2 | wc -l) packages," \
  "gzip'd tar $(tar -C "$app" -czf - node_modules | wc -c | awk '{printf "%.1f MB", $1/1e6}')"
for p in tsx esbuild pino-pretty @opentelemetry/sdk-node @electric-sql/pglite; do
  [ -e "$app/node_modules/$p" ] && echo "  contains $p: $(du -sh "$app/node_modules/$p" | cut -f1)"
done

# The runtime stage's dist (the two bundles) and the console beside it.
mkdir -p "$app/dist" "$app/console"
cp dist/psync.cjs dist/psync-cli.cjs "$app/dist/"
cp -R console/dist "$app/console/dist"

tick=$(getconf CLK_TCK)
echo "node $(node --version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
for i in $(seq 1 "$runs"); do
  data=$(mktemp -d "$work/data-XXXX")
  for phase in fresh restart; do
    tmp=$(mktemp -d "$work/tmp-XXXX")
    port=$((20000 + RANDOM % 20000))
    start=$(date +%s%N)
    (cd "$app" && exec env -i PATH="$(dirname "$(command -v node)"):/usr/bin:/bin" HOME="$work" NODE_ENV=production \
      DATA_DIR="$data" TMPDIR="$tmp" MALLOC_ARENA_MAX=2 HOST=127.0.0.1 PORT=$port INTERNAL_PORT=$((port + 1)) \
      METRICS_PORT=$((port + 2)) node dist/psync.cjs all >"$work/last.log" 2>&1) &
    pid=$!
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; do
      kill -0 $pid 2>/dev/null || { echo "exited before ready:"; tail -5 "$work/last.log"; exit 1; }
      sleep 0.05
    done
    end=$(date +%s%N)
    cpu=$(awk -v t="$tick" '{print int(($14 + $15) * 1000 / t)}' /proc/$pid/stat)
    rss=$(awk '/VmRSS/{print int($2 / 1024)}' /proc/$pid/status)
    echo "run $i $phase: ready $(( (end - start) / 1000000 )) ms, process CPU ${cpu} ms, RSS ${rss} MiB, load $(cut -d' ' -f1 /proc/loadavg)"
    kill -TERM $pid
    wait $pid || true
    rm -rf "$tmp"
  done
  rm -rf "$data"
done
