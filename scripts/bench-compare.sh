#!/usr/bin/env bash
# Tabula against Azurite, measured by the same client in the same run (issue 6's comparison).
#
#   scripts/bench-compare.sh [extra tabula bench flags...]
#
# Builds tabula, serves it with its default durable store (every acknowledged write synced) on
# a fresh temporary --data directory, starts Azurite's table service in memory, both on free
# 127.0.0.1 ports, and runs
#
#   tabula bench --endpoint TABULA --metrics TABULA_CONSOLE/metrics --compare AZURITE --ceiling --json \
#       --concurrency 16 --duration 10s --entities 100000 --partitions 10 --entity-shape typed10
#
# (--metrics makes the report say, per workload, the server's CPU per operation and its store's
# commits and write-ahead log syncs.)
#
# Every workload runs on Tabula, then on Azurite. Writes to $OUT (default bench-out/):
# results.json (the whole run), report.txt (the human report), table.md (the Markdown table for
# BENCHMARKS.md), rss.txt (both servers' peak memory), tabula.log, azurite.log; and the chart to $CHART
# (default docs/bench.svg). Both servers are stopped on exit, whatever happens. Run it on a
# quiet machine: client and servers share its cores, and anything else running skews the
# figures.
#
# Azurite is installed from npm (needs node and npm) on first use by scripts/azurite.sh:
# azurite@$AZURITE_VERSION (default 3.37.0, the version BENCHMARKS.md measured) into
# $AZURITE_HOME (default ~/.cache/azurite), and reinstalled there if another version is found.
# AZURITE_BIN names an azurite-table executable to use instead.
#
# Environment: CONCURRENCY DURATION ENTITIES PARTITIONS ENTITY_SHAPE ENTITY_SIZE WORKLOADS (the
# bench parameters, defaults as above; ENTITY_SHAPE=mixed11 is issue 17's entity, and
# ENTITY_SIZE, unset, is the shape's own size: 1024 bytes for typed10, 1400 for mixed11), OUT, CHART, AZURITE_VERSION, AZURITE_HOME, AZURITE_BIN,
# TABULA_BIN (a tabula binary to use instead of building ./cmd/tabula).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. "$root/scripts/azurite.sh"
out=${OUT:-bench-out}
chart=${CHART:-docs/bench.svg}
mkdir -p "$out" "$(dirname "$chart")"

work=$(mktemp -d)
tabula_pid=
azurite_pid=
cleanup() {
  if [ -n "$tabula_pid" ]; then
    kill "$tabula_pid" 2>/dev/null || true
    wait "$tabula_pid" 2>/dev/null || true
  fi
  azurite_stop "$azurite_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a loopback port nothing listens on, from $1 upwards.
free_port() {
  local p=$1
  while (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

# peak_rss prints the peak resident memory of process $1 in MiB.
peak_rss() {
  awk '/^VmHWM:/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "unknown"
}

tabula=${TABULA_BIN:-$work/tabula}
if [ -z "${TABULA_BIN:-}" ]; then
  echo "building tabula" >&2
  go build -o "$tabula" ./cmd/tabula
fi
if ! "$tabula" bench --help >/dev/null 2>&1; then
  echo "bench-compare: this tabula has no bench command (cmd/tabula must hand 'bench' to internal/bench.Main)" >&2
  exit 1
fi

# Tabula picks its own ports (127.0.0.1:0) and prints its endpoints: the table endpoint in the
# connection string, the banner's last line, and the console (with /metrics) before it.
"$tabula" --data "$work/data" --table-addr 127.0.0.1:0 --queue-addr 127.0.0.1:0 --blob-addr 127.0.0.1:0 --console-addr 127.0.0.1:0 >"$out/tabula.log" 2>&1 &
tabula_pid=$!
tabula_url=
tabula_console=
for _ in $(seq 1 100); do
  tabula_url=$(sed -n 's/.*TableEndpoint=\([^;]*\);.*/\1/p' "$out/tabula.log" | head -n 1)
  tabula_console=$(sed -n 's/^ *console: \(http:[^ ]*\).*/\1/p' "$out/tabula.log" | head -n 1)
  [ -n "$tabula_url" ] && [ -n "$tabula_console" ] && break
  kill -0 "$tabula_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$tabula_url" ] || [ -z "$tabula_console" ]; then
  echo "bench-compare: tabula did not start:" >&2
  cat "$out/tabula.log" >&2
  exit 1
fi

azurite_port=$(free_port 10102)
azurite_start table "$azurite_port" "$out/azurite.log"
azurite_pid=$AZURITE_PID
azurite_url=http://127.0.0.1:$azurite_port/devstoreaccount1

echo "tabula  $tabula_url (durable, data in $work/data)" >&2
# The report goes through tee, so bench cannot see the terminal: ask for the progress line.
progress=()
if [ -t 2 ]; then progress=(--progress); fi
size=()
if [ -n "${ENTITY_SIZE:-}" ]; then size=(--entity-size "$ENTITY_SIZE"); fi
status=0
"$tabula" bench \
  --endpoint "$tabula_url" --label tabula --metrics "${tabula_console%/}/metrics" \
  --compare "$azurite_url" --compare-label azurite \
  --concurrency "${CONCURRENCY:-16}" --duration "${DURATION:-10s}" \
  --entities "${ENTITIES:-100000}" --partitions "${PARTITIONS:-10}" \
  --entity-shape "${ENTITY_SHAPE:-typed10}" "${size[@]}" \
  --workloads "${WORKLOADS:-all}" --ceiling --json "${progress[@]}" "$@" \
  2>&1 >"$out/results.json" | tee "$out/report.txt" >&2 || status=$?
sed -i 's/.*\r//' "$out/report.txt" # drop the progress lines, keep what they were erased for

{
  echo "tabula peak RSS: $(peak_rss "$tabula_pid")"
  echo "azurite peak RSS: $(peak_rss "$azurite_pid")"
} | tee "$out/rss.txt" >&2

if [ -s "$out/results.json" ]; then
  go run ./scripts/chart -in "$out/results.json" -svg "$chart" -md "$out/table.md"
  echo "wrote $out/results.json, $out/table.md, $chart" >&2
fi
if [ "$status" -ne 0 ]; then
  echo "bench-compare: tabula bench failed (exit $status): its figures are not valid" >&2
fi
exit "$status"
