#!/usr/bin/env bash
# Jaeger for the tracing tests and for users: one all-in-one process (OTLP in,
# spans kept in memory, the query API out), built from its Go module. Its UI
# page is a placeholder in this build: the UI's assets are not in the module.
# No tarball, no Docker: needs Go 1.25+ and the Go module proxy.
#
#   scripts/jaeger.sh start     build the binary (first time, ~10 minutes of 2 cores), start, wait until it serves
#   scripts/jaeger.sh build     only build (and cache) the binary
#   scripts/jaeger.sh stop      stop it (SIGTERM; SIGKILL after 30 s)
#   scripts/jaeger.sh restart   stop, then start (traces are kept in memory only: they are gone)
#   scripts/jaeger.sh status    exit 0 if it runs and its query API answers
#
# Idempotent: `start` on a running Jaeger does nothing; a port held by another
# process is an error. Ports: OTLP/gRPC 4317, OTLP/HTTP 4318, query API 16686 (/api/traces/<id>).
#
# Environment:
#   TOOLBRIDGE_JAEGER_DIR   where the binary, the scratch module and logs go (default ~/.cache/toolbridge/jaeger)
#   JAEGER_VERSION          github.com/jaegertracing/jaeger version (default v1.75.0)
#   JAEGER_READY_TIMEOUT    seconds to wait for the query API (default 60)
set -euo pipefail

JAEGER_DIR=${TOOLBRIDGE_JAEGER_DIR:-$HOME/.cache/toolbridge/jaeger}
JAEGER_VERSION=${JAEGER_VERSION:-v1.75.0}
READY_TIMEOUT=${JAEGER_READY_TIMEOUT:-60}
OTLP_GRPC_PORT=4317
OTLP_HTTP_PORT=4318
QUERY_PORT=16686

BIN=$JAEGER_DIR/jaeger-${JAEGER_VERSION#v}
MODULE=$JAEGER_DIR/module-$JAEGER_VERSION
LOGS=$JAEGER_DIR/logs
PIDFILE=$JAEGER_DIR/jaeger.pid
OUT=$LOGS/jaeger.out
QUERY_URL=http://127.0.0.1:$QUERY_PORT/api/services

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The pid from the pid file, if it is a live Jaeger of this directory (not a recycled pid).
running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$BIN" ] || return 1
  echo "$pid"
}

serving() { curl -sf -o /dev/null --max-time 2 "$QUERY_URL"; }

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "jaeger.sh: $1 is not installed ($2)" >&2; exit 1; }
}

# A scratch module that requires Jaeger as a tool, so that `go build` resolves
# the exact versions Jaeger's own go.mod pins, then the binary, cached by version.
build() {
  [ -x "$BIN" ] && return
  need go 'Go 1.25+, e.g. apt-get install -y golang-go, or from the Go module proxy'
  need curl 'apt-get install -y curl'
  mkdir -p "$MODULE" "$LOGS"
  echo "jaeger.sh: building github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION into $BIN (about 10 minutes the first time)"
  local started=$SECONDS
  (
    cd "$MODULE"
    [ -f go.mod ] || go mod init toolbridge.local/jaeger-build >/dev/null 2>&1
    nice -n 10 go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION"
    # Niced: CI starts the brokers meanwhile. A temporary name: an interrupted build leaves no half-written binary.
    CGO_ENABLED=0 nice -n 10 go build -trimpath -o "$BIN.partial" github.com/jaegertracing/jaeger/cmd/jaeger
  ) >"$LOGS/build.out" 2>&1 || { echo "jaeger.sh: the build failed; last lines of $LOGS/build.out:" >&2; tail -n 30 "$LOGS/build.out" >&2; exit 1; }
  mv "$BIN.partial" "$BIN"
  echo "jaeger.sh: built in $((SECONDS - started)) s, $(du -h "$BIN" | cut -f1)"
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PIDFILE"
    echo "Jaeger is not running"
    return
  fi
  kill -TERM "$pid"
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    sleep 0.1
  done
  rm -f "$PIDFILE"
  echo "Jaeger stopped"
}

start() {
  local pid
  if pid=$(running_pid) && serving; then
    echo "Jaeger already running (pid $pid): query API http://127.0.0.1:$QUERY_PORT/api, OTLP http://127.0.0.1:$OTLP_HTTP_PORT"
    return
  fi
  if [ -n "${pid:-}" ]; then stop; fi # alive but not serving: start it again
  need curl 'apt-get install -y curl'
  for p in $OTLP_GRPC_PORT $OTLP_HTTP_PORT $QUERY_PORT; do
    if port_open "$p"; then echo "jaeger.sh: 127.0.0.1:$p is in use by another process" >&2; exit 1; fi
  done
  build
  mkdir -p "$LOGS"

  local started=$SECONDS
  # With no --config, Jaeger runs its all-in-one configuration: OTLP receivers, in-memory storage, query service.
  nohup "$BIN" >"$OUT" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  until serving; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "jaeger.sh: Jaeger exited; last lines of $OUT:" >&2
      tail -n 40 "$OUT" >&2
      rm -f "$PIDFILE"
      exit 1
    fi
    if [ $((SECONDS - started)) -ge "$READY_TIMEOUT" ]; then
      echo "jaeger.sh: not ready within ${READY_TIMEOUT} s; see $OUT" >&2
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$PIDFILE"
      exit 1
    fi
    sleep 0.2
  done
  echo "Jaeger ${JAEGER_VERSION#v} ready (pid $pid): query API http://127.0.0.1:$QUERY_PORT/api, OTLP http://127.0.0.1:$OTLP_HTTP_PORT, log $OUT"
}

case "${1:-start}" in
  start) start ;;
  build) build ;;
  stop) stop ;;
  restart) stop; start ;;
  status)
    if pid=$(running_pid) && serving; then echo "Jaeger running (pid $pid) on 127.0.0.1:$QUERY_PORT"; exit 0; fi
    echo "Jaeger is not running"; exit 1 ;;
  *) echo "usage: $0 start|build|stop|restart|status" >&2; exit 2 ;;
esac
