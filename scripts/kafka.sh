#!/usr/bin/env bash
# Apache Kafka for the tests, benchmarks and users: one KRaft node (broker and
# controller in one JVM) on 127.0.0.1:9092, from Kafka's jars on Maven Central.
# No tarball, no Docker: needs a JDK 17+ and Maven.
#
#   scripts/kafka.sh start     resolve the jars (first time), format (first time), start, wait until it serves
#   scripts/kafka.sh stop      stop it (SIGTERM; SIGKILL after 60 s)
#   scripts/kafka.sh restart   stop, then start: data and committed offsets are kept
#   scripts/kafka.sh status    exit 0 if it runs and 127.0.0.1:9092 accepts connections
#
# Idempotent: `start` on a running broker does nothing; a port held by another
# process is an error. Topics and committed offsets live in $KAFKA_DIR/data and
# survive stop/start; KAFKA_FRESH=1 wipes them before starting.
#
# Environment:
#   TOOLBRIDGE_KAFKA_DIR   where jars, data and logs go (default ~/.cache/toolbridge/kafka)
#   KAFKA_VERSION          org.apache.kafka:kafka_2.13 version (default 4.1.1)
#   KAFKA_READY_TIMEOUT    seconds to wait for the broker (default 120)
#   KAFKA_HEAP             JVM heap flags (default -Xms32m -Xmx512m)
set -euo pipefail

KAFKA_DIR=${TOOLBRIDGE_KAFKA_DIR:-$HOME/.cache/toolbridge/kafka}
KAFKA_VERSION=${KAFKA_VERSION:-4.1.1}
READY_TIMEOUT=${KAFKA_READY_TIMEOUT:-120}
KAFKA_HEAP=${KAFKA_HEAP:-"-Xms32m -Xmx512m"}
PORT=9092
CONTROLLER_PORT=9093

LIB=$KAFKA_DIR/lib-$KAFKA_VERSION
DATA=$KAFKA_DIR/data
LOGS=$KAFKA_DIR/logs
PIDFILE=$KAFKA_DIR/kafka.pid
CONF=$KAFKA_DIR/server.properties
LOG4J=$KAFKA_DIR/log4j2.xml
OUT=$LOGS/kafka.out

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The pid from the pid file, if it is a live kafka.Kafka JVM (not a recycled pid).
running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' kafka.Kafka ' || return 1
  echo "$pid"
}

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "kafka.sh: $1 is not installed ($2)" >&2; exit 1; }
}

# Kafka's core module pulls in the clients, the raft, storage and coordinators, Scala and
# Jackson; Kafka 4 logs through slf4j 1.7 to log4j2, which needs a binding on the class path.
write_pom() {
  cat >"$KAFKA_DIR/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>toolbridge.local</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.16</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-1.2-api</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
EOF
}

resolve_jars() {
  [ -f "$LIB/.complete" ] && return
  need mvn 'apt-get install -y maven'
  echo "kafka.sh: resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION from Maven Central into $LIB"
  rm -rf "$LIB"
  write_pom
  mvn -B -q -Dstyle.color=never -f "$KAFKA_DIR/pom.xml" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DoutputDirectory="$LIB" -DincludeScope=runtime -DprependGroupId=true
  # Two slf4j bindings share class names: keep the slf4j 2 one.
  if ls "$LIB"/*log4j-slf4j2-impl-*.jar >/dev/null 2>&1; then rm -f "$LIB"/*log4j-slf4j-impl-*.jar; fi
  touch "$LIB/.complete"
  echo "kafka.sh: $(ls "$LIB"/*.jar | wc -l) jars, $(du -sh "$LIB" | cut -f1)"
}

# What TrustGraph's Kafka backend relies on, and what makes a one-node test broker quick and small.
write_config() {
  cat >"$CONF" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA

# TrustGraph creates no topics itself: it relies on auto-creation, with one partition.
auto.create.topics.enable=true
num.partitions=1
delete.topic.enable=true
# TrustGraph's producer sends up to 10 MB (max_request_size); the default limit is 1 MB.
message.max.bytes=11534336

# One node: every internal topic has one replica, and one partition so the first group join is quick.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
# Default 3000: every new group's first assignment would wait 3 s for more members.
group.initial.rebalance.delay.ms=0

# A small machine: few threads, a 4 MB log-cleaner buffer instead of 128 MB of heap.
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
background.threads=4
log.cleaner.dedupe.buffer.size=4194304
log.retention.hours=24
log.segment.bytes=104857600
EOF
  cat >"$LOG4J" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="Console" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="state.change.logger" level="warn"/>
    <Logger name="org.apache.kafka.clients" level="warn"/>
    <Root level="info"><AppenderRef ref="Console"/></Root>
  </Loggers>
</Configuration>
EOF
}

# A KRaft cluster id: 16 random bytes, base64url without padding, not starting with '-'.
cluster_id() {
  local id=-
  while [[ "$id" == -* ]]; do id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'); done
  echo "$id"
}

format_storage() {
  [ -f "$DATA/meta.properties" ] && return
  mkdir -p "$DATA"
  java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile="$LOG4J" -cp "$LIB/*" \
    kafka.tools.StorageTool format -t "$(cluster_id)" -c "$CONF" --ignore-formatted >"$LOGS/format.out" 2>&1 ||
    { cat "$LOGS/format.out" >&2; exit 1; }
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PIDFILE"
    echo "Kafka is not running"
    return
  fi
  kill -TERM "$pid"
  local deadline=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    sleep 0.1
  done
  rm -f "$PIDFILE"
  echo "Kafka stopped"
}

start() {
  local pid
  if pid=$(running_pid) && port_open $PORT; then
    echo "Kafka already running (pid $pid) on 127.0.0.1:$PORT"
    return
  fi
  if [ -n "${pid:-}" ]; then stop; fi # alive but not serving: start it again
  need java 'a JDK 17+, e.g. apt-get install -y openjdk-17-jdk-headless'
  for p in $PORT $CONTROLLER_PORT; do
    if port_open $p; then echo "kafka.sh: 127.0.0.1:$p is in use by another process" >&2; exit 1; fi
  done
  mkdir -p "$KAFKA_DIR" "$LOGS"
  resolve_jars
  if [ "${KAFKA_FRESH:-0}" = 1 ]; then rm -rf "$DATA"; fi
  write_config
  format_storage

  local started=$SECONDS
  # shellcheck disable=SC2086 # KAFKA_HEAP holds several flags
  nohup java $KAFKA_HEAP -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$LOG4J" -Dkafka.logs.dir="$LOGS" \
    -cp "$LIB/*" kafka.Kafka "$CONF" >"$OUT" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  until port_open $PORT && grep -q 'Kafka Server started' "$OUT"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "kafka.sh: the broker exited; last lines of $OUT:" >&2
      tail -n 40 "$OUT" >&2
      rm -f "$PIDFILE"
      exit 1
    fi
    if [ $((SECONDS - started)) -ge "$READY_TIMEOUT" ]; then
      echo "kafka.sh: not ready within ${READY_TIMEOUT} s; see $OUT" >&2
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$PIDFILE"
      exit 1
    fi
    sleep 0.1
  done
  echo "Kafka $KAFKA_VERSION ready on 127.0.0.1:$PORT (pid $pid, data $DATA, log $OUT)"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status)
    if pid=$(running_pid) && port_open $PORT; then echo "Kafka running (pid $pid) on 127.0.0.1:$PORT"; exit 0; fi
    echo "Kafka is not running"; exit 1 ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
