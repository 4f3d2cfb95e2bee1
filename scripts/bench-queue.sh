#!/usr/bin/env bash
# The Queue service's figures (issue 13): Tabula against Azurite, measured by the same client in
# the same run, then Get Messages on a deep queue against a shallow one.
#
#   scripts/bench-queue.sh [extra tabula bench flags...]
#
# Builds tabula and serves it with its default durable store (every acknowledged put and delete
# synced) on a fresh temporary --data directory; starts Azurite's queue service in memory
# (scripts/azurite.sh installs the pinned azurite@3.37.0 from npm on first use); both on free
# 127.0.0.1 ports. Then:
#
#   1. tabula bench --workloads queue-put,queue-get-delete, on Tabula then on Azurite
#      (16 workers, 10 s each, 1 KiB messages; get+delete drains a queue preloaded with $MESSAGES
#      messages on Tabula, default 400,000, and $AZURITE_MESSAGES on Azurite, default 40,000:
#      Azurite slows as its queue grows, to about 100 puts a second at 240,000);
#   2. tabula bench --workloads queue-get-at-depth on Tabula with --queue-depth 1000, and again
#      with --queue-depth $DEEP (default 1,000,000): Get Messages at the head of a queue that
#      deep, each message made visible again so that the depth stays. Each waits $SETTLE
#      (default 30s) after its preload, so that the store's flushes and compactions of what
#      the earlier workloads and the preload wrote are not timed as part of Get Messages.
#
# Writes $OUT (default bench-out/queue-*.json and queue-report.txt). Both servers are stopped on
# exit, whatever happens. Run it on a quiet machine: client and servers share its cores.
#
# Environment: CONCURRENCY DURATION MESSAGES AZURITE_MESSAGES DEEP SETTLE OUT TABULA_BIN, and scripts/azurite.sh's
# AZURITE_VERSION AZURITE_HOME AZURITE_BIN.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. "$root/scripts/azurite.sh"
out=${OUT:-bench-out}
mkdir -p "$out"

work=$(mktemp -d)
tabula_pid=
azurite_pid=
cleanup() {
  if [ -n "$tabula_pid" ]; then kill "$tabula_pid" 2>/dev/null || true; wait "$tabula_pid" 2>/dev/null || true; fi
  azurite_stop "$azurite_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  local p=$1
  while (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

tabula=${TABULA_BIN:-$work/tabula}
if [ -z "${TABULA_BIN:-}" ]; then
  echo "building tabula" >&2
  go build -o "$tabula" ./cmd/tabula
fi

"$tabula" --data "$work/data" --table-addr 127.0.0.1:0 --queue-addr 127.0.0.1:0 --console-addr "" --request-log off >"$out/tabula.log" 2>&1 &
tabula_pid=$!
tabula_url= queue_url=
# Both endpoints are read from the connection string, the banner's last line, once it is whole
# (it ends with the queue endpoint's ';').
for _ in $(seq 1 100); do
  tabula_url=$(sed -n 's/.*TableEndpoint=\([^;]*\);.*/\1/p' "$out/tabula.log" | head -n 1)
  queue_url=$(sed -n 's/.*QueueEndpoint=\([^;]*\);.*/\1/p' "$out/tabula.log" | head -n 1)
  [ -n "$tabula_url" ] && [ -n "$queue_url" ] && break
  kill -0 "$tabula_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$tabula_url" ] || [ -z "$queue_url" ]; then
  echo "bench-queue: tabula did not start:" >&2
  cat "$out/tabula.log" >&2
  exit 1
fi

azurite_port=$(free_port 10101)
azurite_start queue "$azurite_port" "$out/azurite-queue.log"
azurite_pid=$AZURITE_PID
azurite_url=http://127.0.0.1:$azurite_port/devstoreaccount1

echo "tabula  $queue_url (durable, data in $work/data)" >&2
echo "azurite $azurite_url (in memory)" >&2
common=(--concurrency "${CONCURRENCY:-16}" --duration "${DURATION:-10s}" --message-size 1024)

report=$out/queue-report.txt
: >"$report"
status=0
echo "== put and get+delete, Tabula then Azurite" >>"$report"
# The queue workloads use only the queue endpoints; --endpoint and --compare name the targets
# (no table workload runs).
"$tabula" bench --endpoint "$tabula_url" --queue-endpoint "$queue_url" --label tabula \
  --compare "$azurite_url" --compare-queue "$azurite_url" --compare-label azurite \
  --workloads queue-put,queue-get-delete --messages "${MESSAGES:-400000}" \
  --compare-messages "${AZURITE_MESSAGES:-40000}" "${common[@]}" --json "$@" \
  2>>"$report" >"$out/queue-compare.json" || status=$?
for depth in 1000 "${DEEP:-1000000}"; do
  echo "== Get Messages at depth $depth (Tabula)" >>"$report"
  "$tabula" bench --endpoint "$tabula_url" --queue-endpoint "$queue_url" --label "tabula-depth-$depth" \
    --workloads queue-get-at-depth --queue-depth "$depth" --settle "${SETTLE:-30s}" "${common[@]}" --json "$@" \
    2>>"$report" >"$out/queue-depth-$depth.json" || status=$?
done
sed -i 's/.*\r//' "$report" # drop progress lines
cat "$report" >&2
if [ "$status" -ne 0 ]; then
  echo "bench-queue: tabula bench failed (exit $status): its figures are not valid" >&2
fi
exit "$status"
