#!/usr/bin/env bash
# RabbitMQ for the tests and CI (Debian's rabbitmq-server, AMQP on 127.0.0.1:5672, guest/guest).
#
#   scripts/rabbitmq.sh start    install if missing (apt-get), start if not running, wait until it serves
#   scripts/rabbitmq.sh stop     stop the node
#   scripts/rabbitmq.sh status   exit 0 if it serves
#
# The tests reuse a running broker; without one they start it themselves.
set -euo pipefail

# Debian installs the commands in /usr/sbin, which a non-root PATH may lack.
export PATH="$PATH:/usr/sbin:/usr/local/sbin:/sbin"
STARTUP_TIMEOUT=${RABBITMQ_STARTUP_TIMEOUT:-90}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

ctl() {
  as_root rabbitmqctl "$@"
}

install_if_missing() {
  if command -v rabbitmq-server >/dev/null 2>&1; then return; fi
  echo "installing rabbitmq-server (apt-get)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq rabbitmq-server >/dev/null
}

serving() {
  ctl -q await_startup --timeout 10 >/dev/null 2>&1
}

start() {
  install_if_missing
  if ! serving; then
    # A node whose app was stopped (rabbitmqctl stop_app) only needs start_app; otherwise start the node.
    if ! ctl -q start_app >/dev/null 2>&1; then
      as_root rabbitmq-server -detached
    fi
    local deadline=$((SECONDS + STARTUP_TIMEOUT))
    until serving; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "RabbitMQ did not start within ${STARTUP_TIMEOUT} s; see /var/log/rabbitmq/" >&2
        exit 1
      fi
      sleep 1
    done
  fi
  echo "RabbitMQ $(ctl -q version 2>/dev/null || echo '?') ready on amqp://127.0.0.1:5672"
}

case "${1:-start}" in
  start) start ;;
  stop) ctl -q stop >/dev/null 2>&1 || true; echo "RabbitMQ stopped" ;;
  status) serving ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
