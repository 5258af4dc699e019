#!/bin/sh
# The cluster phase of `make test-compose` (alone: `make test-compose-cluster`): docker-compose.cluster.yml,
# three groupcoord nodes and PostgreSQL (built from docker/postgres/ on the local base image: no registry),
#  1. compose build + up, until the three nodes are healthy;
#  2. tests/compose/test_compose_cluster.py, phase cluster-load: every node names the same leaders; a producer
#     over the three nodes produces with acks=all while this script `docker kill`s (SIGKILL) the leader of
#     partition 0; the phase goes on until every partition has new acknowledged records;
#  3. phase cluster-check from the two survivors: the same metadata, every acknowledged record read at its
#     offset through each, committed offsets shared, a transaction over every node committed (markers
#     forwarded over the INTERNAL listener) and an aborted one hidden;
#  4. the killed node started again (same volume), phase cluster-check through all three;
#  5. teardown of this stack (containers, volumes, network, the images this run built).
# The tests run from this checkout's .venv when it has the clients, else (or with GROUPCOORD_COMPOSE_CLIENTS=image)
# from the clients image on the host's network (built here unless test-compose.sh built it). The engine and base image must exist (test-compose.sh
# sees to both; alone, this script starts nothing: it expects a Docker engine that answers).
# Progress lines start with "==>". Exit status: the first failing step's.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PROJECT="${COMPOSE_PROJECT_NAME:-groupcoord-test-$$}-cluster"
export GROUPCOORD_BASE_IMAGE="${GROUPCOORD_BASE_IMAGE:-groupcoord-base:bookworm}"
export GROUPCOORD_IMAGE_TAG="${GROUPCOORD_IMAGE_TAG:-$PROJECT}"
export GROUPCOORD_COMPOSE_LOG_LEVEL="${GROUPCOORD_COMPOSE_LOG_LEVEL:-warning}"
# shellcheck source=docker/compose-lib.sh
. "$ROOT/docker/compose-lib.sh"  # free_port, say, wait_healthy
SAY_TAG=cluster
export GROUPCOORD_CLUSTER_PORT1="${GROUPCOORD_CLUSTER_PORT1:-$(free_port)}"
export GROUPCOORD_CLUSTER_PORT2="${GROUPCOORD_CLUSTER_PORT2:-$(free_port)}"
export GROUPCOORD_CLUSTER_PORT3="${GROUPCOORD_CLUSTER_PORT3:-$(free_port)}"
if docker compose version >/dev/null 2>&1; then COMPOSE_BIN="docker compose"; else COMPOSE_BIN="docker-compose"; fi
COMPOSE="$COMPOSE_BIN -p $PROJECT -f docker-compose.cluster.yml"
SHARED=$(mktemp -d /tmp/groupcoord-cluster.XXXXXX)
chmod 777 "$SHARED"  # the clients image runs as an unprivileged user
RUN_ID=$(basename "$SHARED" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
BUILT_CLIENTS=""
T0=$(date +%s)

teardown() {
    status=$?
    set +e
    if [ "$status" -ne 0 ]; then
        say "failed (status $status): the nodes' last log lines"
        $COMPOSE logs --no-color --tail 30 node1 node2 node3 2>/dev/null
    fi
    say "teardown: the cluster's containers, volumes, network and images"
    $COMPOSE down --volumes --remove-orphans >/dev/null 2>&1
    if [ -z "${GROUPCOORD_KEEP_IMAGES:-}" ]; then  # set: kept as a build cache for the next run
        docker image rm -f "groupcoord:$GROUPCOORD_IMAGE_TAG" "groupcoord-postgres:$GROUPCOORD_IMAGE_TAG" >/dev/null 2>&1
    fi
    [ -z "$BUILT_CLIENTS" ] || docker image rm -f "groupcoord-clients:$GROUPCOORD_IMAGE_TAG" >/dev/null 2>&1
    rm -rf "$SHARED"
    say "done: status $status"
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

nodes_healthy() {  # $@: services; a loaded host may take minutes to bring a node up
    wait_healthy 300 "$@"
    say "healthy: $*"
}

bootstrap_of() {  # $@: node numbers -> host:port,...
    out=""
    for n in "$@"; do
        eval "port=\$GROUPCOORD_CLUSTER_PORT$n"
        out="${out:+$out,}127.0.0.1:$port"
    done
    echo "$out"
}

runner=""
if [ "${GROUPCOORD_COMPOSE_CLIENTS:-}" != image ] && [ -x .venv/bin/python ] \
    && .venv/bin/python -c "import aiokafka, pytest, pytest_asyncio" 2>/dev/null; then
    runner=venv
elif ! docker image inspect "groupcoord-clients:$GROUPCOORD_IMAGE_TAG" >/dev/null 2>&1; then
    say "building the clients image (tests run from it)"
    docker build -q --build-arg BASE_IMAGE="$GROUPCOORD_BASE_IMAGE" --target clients \
        -t "groupcoord-clients:$GROUPCOORD_IMAGE_TAG" . >/dev/null
    BUILT_CLIENTS=1
fi

phase() {  # $1: phase, $2: bootstrap, $3: dead node ids; runs tests/compose/test_compose_cluster.py
    if [ "$runner" = venv ]; then
        GROUPCOORD_COMPOSE_PHASE="$1" GROUPCOORD_COMPOSE_BOOTSTRAP="$2" GROUPCOORD_COMPOSE_DEAD="$3" \
            GROUPCOORD_COMPOSE_RUN="$RUN_ID" GROUPCOORD_COMPOSE_SHARED="$SHARED" \
            .venv/bin/python -m pytest -q -rsfE -p no:cacheprovider tests/compose/test_compose_cluster.py
    else
        docker run --rm --network host -v "$SHARED:/shared" -e GROUPCOORD_COMPOSE_PHASE="$1" \
            -e GROUPCOORD_COMPOSE_BOOTSTRAP="$2" -e GROUPCOORD_COMPOSE_DEAD="$3" \
            -e GROUPCOORD_COMPOSE_RUN="$RUN_ID" -e GROUPCOORD_COMPOSE_SHARED=/shared \
            "groupcoord-clients:$GROUPCOORD_IMAGE_TAG" \
            python -m pytest -q -rsfE -p no:cacheprovider tests/compose/test_compose_cluster.py
    fi
}

say "compose build: groupcoord and PostgreSQL on $GROUPCOORD_BASE_IMAGE (ports $(bootstrap_of 1 2 3))"
$COMPOSE build --quiet 2>/dev/null || $COMPOSE build
say "compose up: postgres, node1, node2, node3"
$COMPOSE up -d
nodes_healthy postgres node1 node2 node3
say "phase cluster-load: produce over the three nodes, the leader of partition 0 killed under load"
phase cluster-load "$(bootstrap_of 1 2 3)" "" &
LOAD=$!
i=0
until [ -s "$SHARED/ready" ]; do
    i=$((i + 1))
    if [ $i -gt 240 ] || ! kill -0 "$LOAD" 2>/dev/null; then
        echo "the load phase never became ready" >&2
        wait "$LOAD" || true
        exit 1
    fi
    sleep 0.5
done
VICTIM=$(cat "$SHARED/ready")
case "$VICTIM" in 1|2|3) ;; *) echo "bad victim id '$VICTIM'" >&2; exit 1 ;; esac
say "docker kill (SIGKILL) node$VICTIM, the leader of partition 0"
$COMPOSE kill -s KILL "node$VICTIM"
touch "$SHARED/killed"
wait "$LOAD"
SURVIVORS=$(for n in 1 2 3; do [ "$n" = "$VICTIM" ] || printf '%s ' "$n"; done)
say "phase cluster-check via the survivors ($SURVIVORS)"
# shellcheck disable=SC2086
phase cluster-check "$(bootstrap_of $SURVIVORS)" "$VICTIM"
say "node$VICTIM started again (same volume)"
$COMPOSE start "node$VICTIM"
nodes_healthy "node$VICTIM"
say "phase cluster-check via all three nodes"
phase cluster-check "$(bootstrap_of 1 2 3)" ""
say "all cluster checks passed"
