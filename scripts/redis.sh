#!/usr/bin/env bash
# Redis for the tests and CI (Debian's redis-server on 127.0.0.1:6379, no persistence): the shared
# answered-once store (--answered-store redis://...). Valkey speaks the same protocol.
#
#   scripts/redis.sh start    install if missing (apt-get), start if not running, wait until it serves
#   scripts/redis.sh stop     stop it
#   scripts/redis.sh status   exit 0 if it serves
#
# The tests reuse a running server and skip (with a line saying so) without one.
set -euo pipefail

export PATH="$PATH:/usr/sbin:/usr/local/sbin:/sbin"
PORT=${REDIS_PORT:-6379}
STARTUP_TIMEOUT=${REDIS_STARTUP_TIMEOUT:-30}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install_if_missing() {
  if command -v redis-server >/dev/null 2>&1; then return; fi
  echo "installing redis-server (apt-get)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq redis-server >/dev/null
}

serving() {
  [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ]
}

start() {
  install_if_missing
  if ! serving; then
    # Not Debian's service: one process on the loopback, nothing saved to disk (the store's records live for a TTL).
    redis-server --port "$PORT" --bind 127.0.0.1 --daemonize yes --save '' --appendonly no \
      --logfile /tmp/redis-"$PORT".log --pidfile /tmp/redis-"$PORT".pid
    local deadline=$((SECONDS + STARTUP_TIMEOUT))
    until serving; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "Redis did not start within ${STARTUP_TIMEOUT} s; see /tmp/redis-$PORT.log" >&2
        exit 1
      fi
      sleep 0.2
    done
  fi
  echo "Redis $(redis-cli -p "$PORT" info server | sed -n 's/^redis_version:\([^[:space:]]*\).*/\1/p') ready on redis://127.0.0.1:$PORT"
}

case "${1:-start}" in
  start) start ;;
  stop) redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; echo "Redis stopped" ;;
  status) serving ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
