#!/usr/bin/env bash
# Tabula's memory as the table grows, and its restart time, at 10 million entities.
#
#   scripts/bench-scale.sh [ENTITIES]      (default 10000000; needs ~7 GB of disk per 10M)
#
# Builds tabula, serves it with its durable store on a temporary --data directory (127.0.0.1,
# a free port), preloads ENTITIES entities of about 1 KiB with `tabula bench` while sampling
# the server's RSS every 10 s (with the on-disk size, which shows how far the load is), then
# runs point gets and filtered table scans on the full table, stops the server with SIGTERM,
# and times a restart until the first answered request. Everything is removed at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
entities=${1:-10000000}
work=$(mktemp -d)
pid=
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT

port=18080
while (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; do port=$((port + 1)); done
endpoint=http://127.0.0.1:$port/devstoreaccount1
go build -o "$work/tabula" ./cmd/tabula
rss() { awk '/^VmRSS:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$1/status"; }
hwm() { awk '/^VmHWM:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$1/status"; }
serve() {
  "$work/tabula" --table-addr 127.0.0.1:$port --queue-addr 127.0.0.1:0 --data "$work/data" >"$work/server.log" 2>&1 &
  pid=$!
  until curl -s -o /dev/null "$endpoint/Tables"; do sleep 0.05; done
}

serve
"$work/tabula" bench --endpoint "$endpoint" --table scale --entities "$entities" --workloads point-get,table-scan-filtered \
  --duration 10s --keep --timeout 60m >"$work/bench.log" 2>&1 &
bench=$!
start=$(date +%s)
while kill -0 "$bench" 2>/dev/null; do
  sleep 10
  echo "t=$(($(date +%s) - start))s  RSS $(rss "$pid")  on disk $(du -sh "$work/data" | cut -f1)"
done
wait "$bench"
grep -E "preloaded|^point-get|^table-scan" "$work/bench.log"
echo "after the load and the reads: RSS $(rss "$pid"), peak $(hwm "$pid")"

kill -TERM "$pid"; wait "$pid" || true
t0=$(date +%s.%N)
serve
echo "restart with $entities entities: $(echo "$(date +%s.%N) - $t0" | bc) s to the first answered request; RSS $(rss "$pid")"
