#!/bin/sh
# `make test-compose`: the docker-compose integration run, from nothing, on a Debian machine (as root).
#  1. a Docker engine: use the one that answers; else apt-get install docker.io (+ docker-compose when no
#     compose v2 plugin is there) and start dockerd here, stopping it again at the end;
#  2. the base image: `make image-base` (debootstrap; skipped when the tag exists; no registry needed);
#  3. compose build, then `compose up --exit-code-from clients` (the integration suite against the
#     `coordinator` service, tests that need their own server inside the clients container);
#  4. the coordinator restarted (`compose restart`), then killed (`compose kill` + `start`), with its state on
#     the named volume: tests/compose checks it through the Kafka APIs after each;
#  5. cluster mode: docker-compose.cluster.yml (three nodes + PostgreSQL), a node killed under produce load
#     (docker/test-compose-cluster.sh; GROUPCOORD_COMPOSE_ONLY=cluster, or `make test-compose-cluster`, runs
#     only this step, after 1 and 2);
#  6. teardown: containers, volumes, network, the images this run built (the base image is kept as a cache
#     unless KEEP_BASE_IMAGE=0), and the engine if this script started it (with the iptables rules it added).
# Progress lines start with "==>". Exit status: the first failing step's.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PROJECT="${COMPOSE_PROJECT_NAME:-groupcoord-test-$$}"
export COMPOSE_PROJECT_NAME="$PROJECT"
export GROUPCOORD_BASE_IMAGE="${GROUPCOORD_BASE_IMAGE:-groupcoord-base:bookworm}"
KEEP_BASE_IMAGE="${KEEP_BASE_IMAGE:-1}"
export GROUPCOORD_COMPOSE_LOG_LEVEL="${GROUPCOORD_COMPOSE_LOG_LEVEL:-warning}"
# per-run image tags and host ports, so two runs on one machine do not collide
export GROUPCOORD_IMAGE_TAG="$PROJECT"
# shellcheck source=docker/compose-lib.sh
. "$ROOT/docker/compose-lib.sh"  # free_port, say, wait_healthy
SAY_TAG=""
export GROUPCOORD_EXTERNAL_PORT="${GROUPCOORD_EXTERNAL_PORT:-$(free_port)}"
export GROUPCOORD_METRICS_PUBLISH_PORT="${GROUPCOORD_METRICS_PUBLISH_PORT:-$(free_port)}"
STARTED_DOCKERD=""
DOCKERD_PID=""
COMPOSE=""
T0=$(date +%s)

engine_answers() { docker info >/dev/null 2>&1; }

apt_install() {
    say "apt-get install $*"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$@" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "$@" >/dev/null; }
}

ensure_engine() {
    if command -v docker >/dev/null 2>&1 && engine_answers; then
        say "using the running Docker engine ($(docker version --format '{{.Server.Version}}'))"
        return
    fi
    command -v dockerd >/dev/null 2>&1 || apt_install docker.io
    if engine_answers; then  # the package's service may have started it
        say "Docker engine answers after install"
        return
    fi
    say "starting dockerd (log: /tmp/groupcoord-dockerd.log)"
    dockerd >/tmp/groupcoord-dockerd.log 2>&1 &
    DOCKERD_PID=$!
    STARTED_DOCKERD=1
    i=0
    until engine_answers; do
        i=$((i + 1))
        if [ $i -gt 60 ] || ! kill -0 "$DOCKERD_PID" 2>/dev/null; then
            tail -20 /tmp/groupcoord-dockerd.log
            echo "dockerd did not come up" >&2
            exit 1
        fi
        sleep 1
    done
    say "dockerd is up"
}

ensure_compose() {
    if docker compose version >/dev/null 2>&1; then
        COMPOSE="docker compose"
    else
        command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
        COMPOSE="docker-compose"
    fi
    say "compose: $COMPOSE ($($COMPOSE version --short 2>/dev/null || $COMPOSE version | head -1))"
}

teardown() {
    status=$?
    set +e
    if [ -n "$COMPOSE" ]; then
        if [ "$status" -ne 0 ]; then
            say "failed (status $status): the coordinator's last log lines"
            $COMPOSE logs --no-color --tail 40 coordinator 2>/dev/null
        fi
        say "teardown: containers, volumes, network and the images this run built"
        $COMPOSE down --volumes --remove-orphans --rmi local >/dev/null 2>&1
        docker image rm -f "groupcoord:$GROUPCOORD_IMAGE_TAG" "groupcoord-clients:$GROUPCOORD_IMAGE_TAG" \
            "groupcoord-postgres:$GROUPCOORD_IMAGE_TAG" >/dev/null 2>&1
        # an interrupted build leaves its step container and dangling layers behind (they carry the image's
        # label; the compose containers are gone by now): let the step end, then remove both
        label="label=org.opencontainers.image.title=groupcoord"
        i=0
        while [ -n "$(docker ps -q --filter "$label" --filter status=running)" ] && [ $i -lt 30 ]; do
            sleep 1; i=$((i + 1))
        done
        docker ps -aq --filter "$label" --filter status=exited | xargs -r docker rm -f >/dev/null 2>&1
        docker image prune -f --filter "$label" >/dev/null 2>&1
        [ "$KEEP_BASE_IMAGE" = 1 ] || docker image rm -f "$GROUPCOORD_BASE_IMAGE" >/dev/null 2>&1
    fi
    if [ -n "$STARTED_DOCKERD" ]; then
        say "stopping the dockerd this run started"
        kill "$DOCKERD_PID" 2>/dev/null
        i=0
        while kill -0 "$DOCKERD_PID" 2>/dev/null && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
        # dockerd leaves its NAT and filter chains behind when it exits; remove them and its bridge
        if command -v iptables >/dev/null 2>&1; then
            iptables -t nat -D PREROUTING -m addrtype --dst-type LOCAL -j DOCKER 2>/dev/null
            iptables -t nat -D OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER 2>/dev/null
            iptables -t nat -D POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE 2>/dev/null
            iptables -D FORWARD -j DOCKER-USER 2>/dev/null
            iptables -D FORWARD -j DOCKER-ISOLATION-STAGE-1 2>/dev/null
            iptables -D FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT 2>/dev/null
            iptables -D FORWARD -o docker0 -j DOCKER 2>/dev/null
            iptables -D FORWARD -i docker0 ! -o docker0 -j ACCEPT 2>/dev/null
            iptables -D FORWARD -i docker0 -o docker0 -j ACCEPT 2>/dev/null
            for chain in DOCKER DOCKER-ISOLATION-STAGE-1 DOCKER-ISOLATION-STAGE-2 DOCKER-USER; do
                iptables -F "$chain" 2>/dev/null; iptables -X "$chain" 2>/dev/null
            done
            iptables -t nat -F DOCKER 2>/dev/null; iptables -t nat -X DOCKER 2>/dev/null
        fi
        ip link delete docker0 2>/dev/null
    fi
    say "done: status $status"
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

coordinator_healthy() {
    wait_healthy 90 coordinator
    say "coordinator healthy (ready: state loaded, ApiVersions answered)"
}

compose_check() {  # $1: phase (write | check); runs tests/compose in a clients container
    $COMPOSE run --rm -T -e GROUPCOORD_COMPOSE_PHASE="$1" -e GROUPCOORD_COMPOSE_RUN="$PROJECT" clients \
        python -m pytest -q -rsfE -p no:cacheprovider tests/compose
}

[ "$(id -u)" = 0 ] || { command -v docker >/dev/null && engine_answers; } \
    || { echo "make test-compose: run as root (it may install and start Docker), or with a running engine" >&2; exit 1; }
ensure_engine
ensure_compose
say "base image $GROUPCOORD_BASE_IMAGE"
DOCKER=docker sh "$ROOT/docker/image-base.sh"
if [ "${GROUPCOORD_COMPOSE_ONLY:-}" = cluster ]; then
    say "cluster mode only (GROUPCOORD_COMPOSE_ONLY=cluster)"
    sh "$ROOT/docker/test-compose-cluster.sh"
    exit 0
fi
say "compose build (the server and clients images)"
$COMPOSE build --quiet 2>/dev/null || $COMPOSE build
say "compose up --exit-code-from clients: the integration suite against the coordinator service"
$COMPOSE up --no-color --exit-code-from clients
say "the compose-only scenarios: state written, coordinator restarted and killed, state read back"
$COMPOSE up -d coordinator
coordinator_healthy
compose_check write
say "compose restart coordinator (SIGTERM, same volume)"
$COMPOSE restart coordinator
coordinator_healthy
compose_check check
say "compose kill coordinator (SIGKILL), then start it again"
$COMPOSE kill coordinator
$COMPOSE start coordinator
coordinator_healthy
compose_check check
say "listeners: a client in a container (coordinator:9092) and one on the host (localhost:$GROUPCOORD_EXTERNAL_PORT)"
$COMPOSE run --rm -T -e GROUPCOORD_COMPOSE_PHASE=listeners -e GROUPCOORD_COMPOSE_LISTENER=coordinator:9092 \
    -e GROUPCOORD_COMPOSE_ADVERTISED=coordinator:9092 clients \
    python -m pytest -q -rsfE -p no:cacheprovider tests/compose/test_compose_listeners.py
host_listener_env="GROUPCOORD_COMPOSE_PHASE=listeners GROUPCOORD_COMPOSE_LISTENER=localhost:$GROUPCOORD_EXTERNAL_PORT GROUPCOORD_COMPOSE_ADVERTISED=localhost:$GROUPCOORD_EXTERNAL_PORT"
if [ -x .venv/bin/python ] && .venv/bin/python -c "import kafka, pytest" 2>/dev/null; then
    say "host client: this checkout's .venv"
    env $host_listener_env .venv/bin/python -m pytest -q -rsfE -p no:cacheprovider tests/compose/test_compose_listeners.py
fi
say "host client: the clients image on the host's network (--network host)"
# shellcheck disable=SC2086
docker run --rm --network host $(for kv in $host_listener_env; do printf -- '-e %s ' "$kv"; done) \
    "groupcoord-clients:$GROUPCOORD_IMAGE_TAG" \
    python -m pytest -q -rsfE -p no:cacheprovider tests/compose/test_compose_listeners.py
say "cluster mode: docker-compose.cluster.yml, three nodes and PostgreSQL, a node killed under load"
sh "$ROOT/docker/test-compose-cluster.sh"
say "all compose checks passed"
