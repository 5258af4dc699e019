# Sourced (`. "$ROOT/docker/compose-lib.sh"`), not run: the steps docker/test-compose.sh and
# docker/test-compose-cluster.sh both take, kept in one place so the two runs wait and report alike.
# The sourcing script sets T0 (its start, in epoch seconds) before the first `say`, COMPOSE (the compose
# command line for its stack) before the first `wait_healthy`, and SAY_TAG (a word after "==> [", e.g.
# "cluster") when its progress lines should say which script wrote them.
# shellcheck shell=sh

# A TCP port free on the loopback now (the OS picks it), for a service's published host port.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A progress line: "==> [<tag> <seconds since T0>s] <words>".
say() { echo "==> [${SAY_TAG:+$SAY_TAG }$(( $(date +%s) - T0 ))s] $*"; }

# $1: seconds each service may take, $2...: compose services. Polls Docker's health status of each in turn
# (the images' HEALTHCHECK says when a node is ready) and returns 1, naming the service, when one is not
# healthy in time; so the caller's `set -e` ends the run there.
wait_healthy() {
    limit=$1
    shift
    for svc in "$@"; do
        cid=$($COMPOSE ps -q "$svc")
        i=0
        until [ "$(docker inspect --format '{{.State.Health.Status}}' "$cid" 2>/dev/null)" = healthy ]; do
            i=$((i + 1))
            if [ $i -gt "$limit" ]; then
                echo "$svc did not become healthy in $limit s" >&2
                return 1
            fi
            sleep 1
        done
    done
}
