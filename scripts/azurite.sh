#!/usr/bin/env bash
# Azurite, Microsoft's Azure Storage emulator: the peer the bench scripts measure Tabula against.
#
# The bench scripts source this file and call its functions:
#
#   . scripts/azurite.sh
#   azurite_start SERVICE PORT LOG [AZURITE ARGS...]
#       starts Azurite's SERVICE (blob, queue or table) on 127.0.0.1:PORT, in memory unless
#       ARGS say --location DIR, its output to LOG; returns once the port answers. Sets
#       AZURITE_PID (a child of the calling shell) and prints what it started on stderr.
#   azurite_stop PID
#       stops it (SIGTERM, then SIGKILL after 10 s).
#   azurite_bin SERVICE
#       prints the azurite-SERVICE executable, installing the pinned Azurite first if needed.
#
# By hand: scripts/azurite.sh install | start SERVICE PORT [ARGS...] | stop PORT
# (start keeps the pid and the log in $AZURITE_HOME/azurite-PORT.{pid,log} for stop.)
#
# Azurite comes from npm (node and npm are all it needs): azurite@$AZURITE_VERSION (default
# 3.37.0, the version BENCHMARKS.md measured) is installed into $AZURITE_HOME (default
# ~/.cache/azurite) on first use, and again there if another version is found. AZURITE_BIN
# names an azurite-SERVICE executable to use instead.

azurite_version=${AZURITE_VERSION:-3.37.0}
azurite_home=${AZURITE_HOME:-$HOME/.cache/azurite}

azurite_bin() {
  local service=$1
  case $service in blob | queue | table) ;; *)
    echo "azurite: the service is blob, queue or table, not '$service'" >&2
    return 2
    ;;
  esac
  if [ -n "${AZURITE_BIN:-}" ]; then
    echo "$AZURITE_BIN"
    return
  fi
  local bin=$azurite_home/node_modules/.bin/azurite-$service installed
  installed=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$azurite_home/node_modules/azurite/package.json" 2>/dev/null | head -n 1)
  if [ ! -x "$bin" ] || [ "$installed" != "$azurite_version" ]; then
    if ! command -v npm >/dev/null; then
      echo "azurite: installing Azurite needs node and npm (or set AZURITE_BIN)" >&2
      return 1
    fi
    echo "azurite: installing azurite@$azurite_version into $azurite_home" >&2
    mkdir -p "$azurite_home"
    [ -f "$azurite_home/package.json" ] || echo '{"private": true}' >"$azurite_home/package.json"
    if ! (cd "$azurite_home" && npm install --no-fund --no-audit --save-exact "azurite@$azurite_version" >npm-install.log 2>&1); then
      echo "azurite: npm install azurite@$azurite_version failed, see $azurite_home/npm-install.log" >&2
      return 1
    fi
  fi
  echo "$bin"
}

# azurite_listening reports whether something accepts connections on 127.0.0.1:$1.
azurite_listening() { (: </dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

azurite_start() {
  local service=$1 port=$2 log=$3 bin
  shift 3
  bin=$(azurite_bin "$service") || return
  if azurite_listening "$port"; then
    echo "azurite: 127.0.0.1:$port is taken" >&2
    return 1
  fi
  local storage=(--inMemoryPersistence)
  case " $* " in *" --location "*) storage=() ;; esac
  "$bin" --"${service}Host" 127.0.0.1 --"${service}Port" "$port" "${storage[@]}" --disableTelemetry "$@" >"$log" 2>&1 &
  AZURITE_PID=$!
  local _
  for _ in $(seq 1 300); do
    azurite_listening "$port" && break
    kill -0 "$AZURITE_PID" 2>/dev/null || break
    sleep 0.1
  done
  if ! azurite_listening "$port"; then
    echo "azurite: $service did not start on 127.0.0.1:$port:" >&2
    cat "$log" >&2
    azurite_stop "$AZURITE_PID"
    return 1
  fi
  echo "azurite $("$bin" --version 2>/dev/null || echo "(version unknown)") $service: http://127.0.0.1:$port/devstoreaccount1 (pid $AZURITE_PID${storage:+, in memory})" >&2
}

azurite_stop() {
  local pid=$1 _
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Run rather than sourced: the commands of the header.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case ${1:-} in
  install)
    azurite_bin blob >/dev/null
    ;;
  start)
    [ $# -ge 3 ] || { echo "usage: $0 start SERVICE PORT [AZURITE ARGS...]" >&2; exit 2; }
    service=$2 port=$3
    shift 3
    mkdir -p "$azurite_home"
    azurite_start "$service" "$port" "$azurite_home/azurite-$port.log" "$@"
    echo "$AZURITE_PID" >"$azurite_home/azurite-$port.pid"
    disown "$AZURITE_PID"
    ;;
  stop)
    [ $# -ge 2 ] || { echo "usage: $0 stop PORT" >&2; exit 2; }
    pidfile=$azurite_home/azurite-$2.pid
    if [ -f "$pidfile" ]; then
      azurite_stop "$(cat "$pidfile")"
      rm -f "$pidfile"
    fi
    ;;
  *)
    echo "usage: $0 install | start SERVICE PORT [AZURITE ARGS...] | stop PORT" >&2
    exit 2
    ;;
  esac
fi
