#!/usr/bin/env bash
# A real Apache Pulsar standalone for the tests, the benches and users without
# Docker: the broker's jars come from Maven Central (resolved once with Maven
# into ~/.cache/toolbridge/pulsar), it listens on 127.0.0.1 only, and it has
# TrustGraph's tenant `tg` with the namespaces flow, request, response, notify.
#
#   scripts/pulsar.sh start     resolve the jars if needed, start if not running, wait until healthy
#   scripts/pulsar.sh stop      stop the broker this script started (by its pid)
#   scripts/pulsar.sh status    exit 0 if it runs and is healthy
#   scripts/pulsar.sh resolve   only resolve the jars (a CI cache step)
#
# Needs JDK 17+, Maven 3.8+ (installed with apt-get when missing) and curl. Start is idempotent:
# a healthy broker is left as it is.
#
# Environment:
#   PULSAR_VERSION    4.0.7 (4.0.x is the LTS line; 4.0.8 is incomplete on Maven Central)
#   PULSAR_PORT       binary protocol port, 6650
#   PULSAR_WEB_PORT   admin REST port, 8081 — not Pulsar's 8080, which toolbridge's HTTP gateway uses
#   PULSAR_BOOKIE_PORT  the in-process bookie, 3181
#   PULSAR_HOME       jars, config, data and logs: ~/.cache/toolbridge/pulsar
#   PULSAR_READY_TIMEOUT  seconds to wait for a healthy broker, 180
#   PULSAR_KEEP_DATA=1    keep topics and subscriptions from the last run (default: fresh data)
set -euo pipefail

PULSAR_VERSION=${PULSAR_VERSION:-4.0.7}
PORT=${PULSAR_PORT:-6650}
WEB_PORT=${PULSAR_WEB_PORT:-8081}
BOOKIE_PORT=${PULSAR_BOOKIE_PORT:-3181}
HOME_DIR=${PULSAR_HOME:-$HOME/.cache/toolbridge/pulsar}
READY_TIMEOUT=${PULSAR_READY_TIMEOUT:-180}
LIB=$HOME_DIR/lib-$PULSAR_VERSION
RUN=$HOME_DIR/run
PIDFILE=$RUN/broker.pid
LOG=$RUN/pulsar.log
ADMIN=http://127.0.0.1:$WEB_PORT
CDS_ARCHIVE=$HOME_DIR/cds-$PULSAR_VERSION.jsa

say() { echo "pulsar: $*"; }

# The broker started from this directory: by its pid file, or (the file lost) by its command line.
our_pid() {
  local pid=""
  [ -f "$PIDFILE" ] && pid=$(cat "$PIDFILE")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q PulsarStandaloneStarter; then
    echo "$pid"; return 0
  fi
  pid=$(pgrep -f "PulsarStandaloneStarter --config $RUN/standalone.conf" | head -1) || return 1
  [ -n "$pid" ] && echo "$pid"
}

healthy() { curl -sf --max-time 20 "$ADMIN/admin/v2/brokers/health" >/dev/null 2>&1; }

# Pulsar's parent POM is imported as a BOM: without it Maven's nearest-wins
# mediation mixes library versions and the broker dies at start.
write_pom() {
  cat > "$HOME_DIR/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>toolbridge.local</groupId>
  <artifactId>pulsar-standalone</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.apache.pulsar</groupId><artifactId>pulsar</artifactId>
        <version>$PULSAR_VERSION</version><type>pom</type><scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency><groupId>org.apache.pulsar</groupId><artifactId>pulsar-broker</artifactId><version>$PULSAR_VERSION</version></dependency>
    <!-- the broker POM brings no logging backend; the tarball adds these -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.16</version></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version>
        <configuration>
          <outputDirectory>$LIB</outputDirectory>
          <includeScope>runtime</includeScope>
          <prependGroupId>true</prependGroupId>
        </configuration>
      </plugin>
    </plugins>
  </build>
</project>
EOF
}

# A JDK and Maven from the distribution when missing (as scripts/rabbitmq.sh installs RabbitMQ).
install_if_missing() {
  command -v java >/dev/null && command -v mvn >/dev/null && return
  if ! command -v apt-get >/dev/null; then
    say "needs a JDK 17+ and Maven on PATH (Debian/Ubuntu: apt-get install -y openjdk-17-jdk-headless maven)"; exit 1
  fi
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  say "installing a JDK and Maven (apt-get)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
}

resolve_jars() {
  if [ -f "$LIB/.complete" ]; then return; fi
  install_if_missing
  mkdir -p "$HOME_DIR"
  write_pom
  rm -rf "$LIB"
  say "resolving org.apache.pulsar:pulsar-broker:$PULSAR_VERSION from Maven Central into $LIB"
  mvn -B -q -f "$HOME_DIR/pom.xml" dependency:copy-dependencies
  # A transitive slf4j 1.x binding holds the same classes as the 2.x one.
  rm -f "$LIB"/*log4j-slf4j-impl-*.jar
  touch "$LIB/.complete"
  say "$(ls "$LIB"/*.jar | wc -l) jars, $(du -sh "$LIB" | cut -f1)"
}

write_config() {
  mkdir -p "$RUN"
  cat > "$RUN/standalone.conf" <<EOF
# Read twice: as the broker's configuration and as the in-process bookie's.
clusterName=standalone
# Empty: metadata in RocksDB, no ZooKeeper.
metadataStoreUrl=
configurationMetadataStoreUrl=
brokerServicePort=$PORT
webServicePort=$WEB_PORT
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
webSocketServiceEnabled=false
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
managedLedgerCacheSizeMB=64
# A caught-up cursor looks for new entries at once (default: 10 ms later).
managedLedgerNewEntriesCheckDelayInMillis=0
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
brokerDeleteInactiveTopicsEnabled=false
authenticationEnabled=false
authorizationEnabled=false
functionsWorkerEnabled=false
transactionCoordinatorEnabled=false
loadManagerClassName=org.apache.pulsar.broker.loadbalance.NoopLoadManager
loadBalancerEnabled=false
# the bookie
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
dbStorage_writeCacheMaxSizeMb=32
dbStorage_readAheadCacheMaxSizeMb=32
dbStorage_rocksDB_writeBufferSizeMB=4
dbStorage_rocksDB_sstSizeInMB=4
journalSyncData=false
journalMaxGroupWaitMSec=1
journalFlushWhenQueueEmpty=true
diskUsageThreshold=0.99
diskUsageWarnThreshold=0.99
allowLoopback=true
gcWaitTime=300000
nettyMaxFrameSizeBytes=5253120
httpServerEnabled=false
# Without it the bookie ignores --bookkeeper-port and takes a random one.
allowEphemeralPorts=true
listeningInterface=lo
EOF
  cat > "$RUN/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="Console" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{HH:mm:ss.SSS} [%t] %-5level %logger{36} - %msg%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="org.apache.zookeeper" level="warn"/>
    <Logger name="org.eclipse.jetty" level="warn"/>
    <Logger name="org.apache.bookkeeper" level="warn"/>
    <Root level="info"><AppenderRef ref="Console"/></Root>
  </Loggers>
</Configuration>
EOF
}

stop_broker() {
  local pid
  if pid=$(our_pid); then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then say "still running after 30 s; SIGKILL $pid"; kill -9 "$pid"; fi
    say "stopped"
  fi
  rm -f "$PIDFILE"
  # A first run dumps the classes it loaded when it exits cleanly; it becomes the archive only if that run got healthy.
  if [ -s "$CDS_ARCHIVE.new" ] && [ -f "$CDS_ARCHIVE.ok" ]; then mv -f "$CDS_ARCHIVE.new" "$CDS_ARCHIVE"; fi
  rm -f "$CDS_ARCHIVE.new" "$CDS_ARCHIVE.ok"
}

fail() {
  say "FAILED: $*"
  tail -n 40 "$LOG" 2>/dev/null || true
  stop_broker >/dev/null
  exit 1
}

create_tg_namespaces() {
  # TrustGraph maps request:tg:joke to non-persistent://tg/request/joke: it needs tenant tg and these namespaces.
  curl -s -o /dev/null -X PUT -H 'Content-Type: application/json' \
    -d '{"adminRoles":[],"allowedClusters":["standalone"]}' "$ADMIN/admin/v2/tenants/tg"
  for ns in flow request response notify; do
    curl -s -o /dev/null -X PUT "$ADMIN/admin/v2/namespaces/tg/$ns"
  done
  local have; have=$(curl -sf "$ADMIN/admin/v2/namespaces/tg" || true)
  for ns in flow request response notify; do
    echo "$have" | grep -q "\"tg/$ns\"" || fail "namespace tg/$ns was not created (got: $have)"
  done
}

start_broker() {
  local pid
  if pid=$(our_pid); then
    if healthy; then create_tg_namespaces; say "already running (pid $pid), pulsar://127.0.0.1:$PORT, admin $ADMIN"; return; fi
    say "pid $pid is not healthy; restarting it"
    stop_broker
  fi
  for p in "$PORT" "$WEB_PORT" "$BOOKIE_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      say "127.0.0.1:$p is taken by something this script did not start (ports: $PORT binary, $WEB_PORT admin, $BOOKIE_PORT bookie; see PULSAR_*_PORT)"
      exit 1
    fi
  done
  install_if_missing
  resolve_jars
  write_config
  if [ "${PULSAR_KEEP_DATA:-0}" != 1 ]; then rm -rf "$RUN/data"; fi
  mkdir -p "$RUN/data/bookkeeper" "$RUN/tmp"

  local jvm=(
    -Xms64m -Xmx256m -XX:MaxDirectMemorySize=256m -XX:+UseSerialGC
    # a test broker needs no C2-compiled code; C1 alone starts faster
    -XX:TieredStopAtLevel=1
    -Djava.io.tmpdir="$RUN/tmp"
    -Dlog4j2.configurationFile="$RUN/log4j2.xml" -Dlog4j.shutdownHookEnabled=false
    -Djute.maxbuffer=10485760 -Djava.net.preferIPv4Stack=true -Dio.netty.tryReflectionSetAccessible=true
    --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.util.zip=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
    --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    -Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver
    -Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver
    -Dpulsar.allocator.exit_on_oom=true -Dotel.sdk.disabled=true
  )
  # An archive of the classes a first run loaded cuts later starts from ~10 s to ~4 s.
  if [ -s "$CDS_ARCHIVE" ]; then
    jvm+=(-XX:SharedArchiveFile="$CDS_ARCHIVE" -Xshare:auto '-Xlog:cds*=off')
  else
    jvm+=(-XX:ArchiveClassesAtExit="$CDS_ARCHIVE.new" '-Xlog:cds*=off')
  fi

  # The standalone starter resolves data/ and conf/ relative to its working directory.
  cd "$RUN"
  local started; started=$(date +%s%N)
  # A pid file left by a broker of an earlier boot would be read below before the new one is written.
  rm -f "$PIDFILE"
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$PIDFILE" \
    java "${jvm[@]}" -cp "$LIB/*" org.apache.pulsar.PulsarStandaloneStarter \
      --config "$RUN/standalone.conf" --no-functions-worker --no-stream-storage \
      --advertised-address 127.0.0.1 --bookkeeper-port "$BOOKIE_PORT" \
      --metadata-dir "$RUN/data/metadata" --bookkeeper-dir "$RUN/data/bookkeeper" \
      > "$LOG" 2>&1 < /dev/null &
  for _ in $(seq 1 50); do [ -s "$PIDFILE" ] && break; sleep 0.1; done
  pid=$(cat "$PIDFILE")

  # public/default is created last in the standalone's start-up: then it is fully up.
  local deadline=$((SECONDS + READY_TIMEOUT))
  until curl -sf "$ADMIN/admin/v2/namespaces/public" 2>/dev/null | grep -q 'public/default'; do
    kill -0 "$pid" 2>/dev/null || fail "java exited during start-up (log: $LOG)"
    [ "$SECONDS" -lt "$deadline" ] || fail "not up after ${READY_TIMEOUT} s (log: $LOG)"
    sleep 0.2
  done
  # The health check writes and reads a message through the bookie.
  until healthy; do
    [ "$SECONDS" -lt "$deadline" ] || fail "not healthy after ${READY_TIMEOUT} s (log: $LOG)"
    sleep 0.5
  done
  create_tg_namespaces
  [ -f "$CDS_ARCHIVE" ] || touch "$CDS_ARCHIVE.ok"
  local ms=$(( ($(date +%s%N) - started) / 1000000 ))
  say "ready in $((ms / 1000)).$(( (ms % 1000) / 100 )) s (pid $pid): pulsar://127.0.0.1:$PORT, admin $ADMIN, tenant tg; log $LOG"
}

case "${1:-start}" in
  start) start_broker ;;
  stop) stop_broker ;;
  status)
    if pid=$(our_pid) && healthy; then echo "pulsar: running (pid $pid), pulsar://127.0.0.1:$PORT, admin $ADMIN"; else echo "pulsar: not running"; exit 1; fi ;;
  resolve) resolve_jars ;;
  *) echo "usage: $0 start|stop|status|resolve" >&2; exit 2 ;;
esac
