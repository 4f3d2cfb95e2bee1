#!/usr/bin/env bash
# The Blob service's figures (issue 12): Tabula against Azurite, measured by the same client in
# the same run; against the disk under Tabula's data and a Go file server sending the same
# bytes from it; Tabula's memory while it moves a large blob; List Blobs at two sizes.
#
#   scripts/bench-blob.sh [extra tabula bench flags...]
#
# Builds tabula and serves it with its default durable store (every acknowledged block synced)
# on a fresh --data directory under $WORK_DIR (default /var/tmp: a disk, where /tmp may be
# memory); starts Azurite's blob service in memory (scripts/azurite.sh installs the pinned
# azurite@3.37.0 from npm on first use); both on free 127.0.0.1 ports. Then, in order:
#
#   1. memory: on a Tabula of its own, a $RSS_BLOB_SIZE (default 4GiB) blob is uploaded (Put
#      Block ×8 in flight, Put Block List) and downloaded (ranged Get Blob ×8, then one Get
#      Blob), while the server's VmRSS is sampled; its VmHWM at the end is the peak.
#   2. the comparison: blob-upload, blob-download-ranged, blob-download ($BLOB_SIZE, default
#      1GiB, in 4 MiB blocks, 8 in flight), blob-put-small and blob-get-small (4 KiB, 16
#      clients), $DURATION (default 10s) each, on Tabula then on Azurite; with --disk-dir on
#      Tabula's filesystem: the disk's synced sequential write rate, and the downloads against
#      an in-process net/http.ServeFile sending the same bytes from a file there.
#   3. List Blobs (Tabula): pages of 5,000 in a container of 10,000 blobs, then of $LIST_LARGE
#      (default 1,000,000) blobs, preloaded by 256 concurrent empty Put Blobs; $LIST_CONCURRENCY
#      (default 1) clients, so that a page's latency is its cost.
#
# Writes to $OUT (default bench-out/): blob-bars.md (the issue's bars, met or not), blob-report.txt
# (every report), blob-compare.json, blob-list-small.json, blob-list-large.json, blob-rss.json,
# blob-rss.txt, tabula-blob-rss.log, tabula-blob.log, azurite-blob.log. Both servers are stopped on exit, whatever
# happens. Run it on a quiet machine: client and servers share its cores. It needs about
# 8 GB free under $WORK_DIR (more on a disk faster than 500 MB/s: uploads run for $DURATION)
# and, for Azurite, memory for about 3 GB of blobs (in memory, Azurite takes at most half the
# machine's memory for blobs unless AZURITE_ARGS says --extentMemoryLimit MB; or give it
# --location DIR to keep them on disk).
#
# Environment: BLOB_SIZE RSS_BLOB_SIZE DURATION CONCURRENCY LIST_LARGE LIST_CONCURRENCY WORK_DIR OUT TABULA_BIN,
# AZURITE_ARGS (extra Azurite flags, e.g. --extentMemoryLimit 8192), and scripts/azurite.sh's
# AZURITE_VERSION AZURITE_HOME AZURITE_BIN.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. "$root/scripts/azurite.sh"
out=${OUT:-bench-out}
mkdir -p "$out"
blob_size=${BLOB_SIZE:-1GiB}
rss_blob_size=${RSS_BLOB_SIZE:-4GiB}
duration=${DURATION:-10s}
concurrency=${CONCURRENCY:-16}
list_large=${LIST_LARGE:-1000000}
list_concurrency=${LIST_CONCURRENCY:-1}

work=$(mktemp -d "${WORK_DIR:-/var/tmp}/bench-blob.XXXXXX")
tabula_pid=
azurite_pid=
sampler_pid=
stop_tabula() {
  if [ -n "$tabula_pid" ]; then
    kill "$tabula_pid" 2>/dev/null || true
    wait "$tabula_pid" 2>/dev/null || true
    tabula_pid=
  fi
}
cleanup() {
  if [ -n "$sampler_pid" ]; then kill "$sampler_pid" 2>/dev/null || true; fi
  stop_tabula
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

# start_tabula DATA_DIR LOG starts a Tabula and sets tabula_pid, table_url and blob_url from the
# connection string its banner ends with.
start_tabula() {
  "$tabula" --data "$1" --table-addr 127.0.0.1:0 --queue-addr 127.0.0.1:0 --blob-addr 127.0.0.1:0 \
    --console-addr "" --request-log off >"$2" 2>&1 &
  tabula_pid=$!
  table_url= blob_url=
  for _ in $(seq 1 100); do
    table_url=$(sed -n 's/.*TableEndpoint=\([^;]*\);.*/\1/p' "$2" | head -n 1)
    blob_url=$(sed -n 's/.*BlobEndpoint=\([^;]*\);.*/\1/p' "$2" | head -n 1)
    [ -n "$table_url" ] && [ -n "$blob_url" ] && return 0
    kill -0 "$tabula_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench-blob: tabula did not start:" >&2
  cat "$2" >&2
  exit 1
}

# sample_rss PID FILE writes to FILE the highest VmRSS (KiB) of PID seen every 0.2 s.
sample_rss() {
  local max=0 key value _
  while kill -0 "$1" 2>/dev/null; do
    while read -r key value _; do
      if [ "$key" = VmRSS: ] && [ "$value" -gt "$max" ]; then
        max=$value
        echo "$max" >"$2"
      fi
    done <"/proc/$1/status" 2>/dev/null || true
    sleep 0.2
  done
}

report=$out/blob-report.txt
: >"$report"
status=0
common=(--duration "$duration" --timeout 10m --json)
# The reports go through tee, so bench cannot see the terminal: ask for the progress line.
if [ -t 2 ]; then common+=(--progress); fi
run_bench() { # JSON_OUT ARGS...: one tabula bench run, its report appended to $report
  local json=$1 start=$SECONDS
  shift
  "$tabula" bench "${common[@]}" "$@" 2>&1 >"$json" | tee -a "$report" >&2 || status=$?
  echo "(this run took $((SECONDS - start)) s; $SECONDS s so far)" | tee -a "$report" >&2
}

echo "== 1. memory: a $rss_blob_size blob uploaded and downloaded (Tabula)" | tee -a "$report" >&2
start_tabula "$work/rss-data" "$out/tabula-blob-rss.log"
echo 0 >"$work/rss-max"
sample_rss "$tabula_pid" "$work/rss-max" &
sampler_pid=$!
run_bench "$out/blob-rss.json" --endpoint "$table_url" --blob-endpoint "$blob_url" --label tabula \
  --workloads blob-download-ranged,blob-download --blob-size "$rss_blob_size" --duration 1s "$@"
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$tabula_pid/status")
{
  echo "tabula peak RSS (VmHWM) while a $rss_blob_size blob was uploaded and downloaded: $((hwm / 1024)) MiB"
  echo "highest VmRSS sampled every 0.2 s: $(($(cat "$work/rss-max") / 1024)) MiB"
} | tee "$out/blob-rss.txt" | tee -a "$report" >&2
stop_tabula
rm -rf "$work/rss-data"

start_tabula "$work/data" "$out/tabula-blob.log"
azurite_port=$(free_port 10100)
# shellcheck disable=SC2086 # AZURITE_ARGS is words
azurite_start blob "$azurite_port" "$out/azurite-blob.log" ${AZURITE_ARGS:-}
azurite_pid=$AZURITE_PID
azurite_url=http://127.0.0.1:$azurite_port/devstoreaccount1
echo "tabula  $blob_url (durable, data in $work/data)" >&2
mkdir -p "$work/disk"
# --endpoint and --compare name the targets; no table workload runs.
targets=(--endpoint "$table_url" --blob-endpoint "$blob_url" --label tabula
  --compare "$azurite_url" --compare-blob "$azurite_url" --compare-label azurite)

echo "== 2. Tabula against Azurite, the disk and a Go file server" | tee -a "$report" >&2
run_bench "$out/blob-compare.json" "${targets[@]}" \
  --workloads blob-upload,blob-download-ranged,blob-download,blob-put-small,blob-get-small \
  --blob-size "$blob_size" --block-size 4MiB --blob-parallel 8 --small-size 4KiB --small-blobs 2000 --concurrency "$concurrency" \
  --disk-dir "$work/disk" "$@"

# Azurite is left out: no bar compares it here, and its preload is slow.
echo "== 3. List Blobs, pages of 5,000: 10,000 blobs, then $list_large (Tabula)" | tee -a "$report" >&2
for n in 10000 "$list_large"; do
  [ "$n" = 10000 ] && json=$out/blob-list-small.json || json=$out/blob-list-large.json
  run_bench "$json" --endpoint "$table_url" --blob-endpoint "$blob_url" --label "tabula-$n" \
    --workloads blob-list --list-blobs "$n" --list-page 5000 --blob-loaders 256 --concurrency "$list_concurrency" "$@"
done

sed -i 's/.*\r//' "$report" # drop the progress lines, keep what they were erased for
echo >&2
go run ./scripts/blobbars -compare "$out/blob-compare.json" -list-small "$out/blob-list-small.json" \
  -list-large "$out/blob-list-large.json" -rss-hwm-kib "$hwm" -rss-blob "$rss_blob_size" -md "$out/blob-bars.md" >&2 || status=$?
if [ "$status" -ne 0 ]; then
  echo "bench-blob: a run failed (exit $status): its figures are not valid" >&2
fi
exit "$status"
