#!/bin/sh
# `make image-base`: the base image the Dockerfile builds FROM, made locally with debootstrap, so no container
# registry is needed (air-gapped hosts, or hosts where python:3.11-slim cannot be pulled). Debian bookworm
# minbase + its python3.11, venv and pip, imported under $GROUPCOORD_BASE_IMAGE. A no-op when the tag exists.
#   GROUPCOORD_BASE_IMAGE   tag to build (default groupcoord-base:bookworm)
#   GROUPCOORD_DEBIAN_MIRROR  apt mirror debootstrap reads (default: the machine's own apt configuration's
#                           Debian mirror, found by docker/debian-mirror.sh; DEBIAN_MIRROR, the older name, too)
#   DOCKER                  docker CLI (default docker)
#   HOST_CA_DIR             extra CA certificates (*.crt) to trust in the image (default
#                           /usr/local/share/ca-certificates: the host's own additions, e.g. a TLS-inspecting
#                           proxy's CA, without which pip cannot reach PyPI from a build; empty: none)
set -eu
TAG="${GROUPCOORD_BASE_IMAGE:-groupcoord-base:bookworm}"
DOCKER="${DOCKER:-docker}"
HOST_CA_DIR="${HOST_CA_DIR-/usr/local/share/ca-certificates}"
PACKAGES="python3,python3-venv,python3-pip,ca-certificates,tini,curl,openssl"

if $DOCKER image inspect "$TAG" >/dev/null 2>&1; then
    echo "==> base image $TAG exists; skipping debootstrap (docker rmi $TAG to rebuild)"
    exit 0
fi
MIRROR="$(sh "$(dirname "$0")/debian-mirror.sh")"  # exits here, with its message, when none is found
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "==> installing debootstrap (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; }
fi
ROOTFS="$(mktemp -d /tmp/groupcoord-rootfs.XXXXXX)"
trap 'rm -rf "$ROOTFS"' EXIT INT TERM
echo "==> debootstrap bookworm (minbase + $PACKAGES) from $MIRROR: a few minutes"
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 \
    || { tail -30 "$ROOTFS.log"; rm -f "$ROOTFS.log"
         echo "==> debootstrap failed: is $MIRROR a Debian mirror with bookworm? (GROUPCOORD_DEBIAN_MIRROR=...)"; exit 1; }
rm -f "$ROOTFS.log"
if [ -n "$HOST_CA_DIR" ] && ls "$HOST_CA_DIR"/*.crt >/dev/null 2>&1; then
    echo "==> trusting the host's extra CA certificates from $HOST_CA_DIR"
    cp "$HOST_CA_DIR"/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
    chroot "$ROOTFS" update-ca-certificates >/dev/null
fi
# Smaller image: no apt lists, caches, docs or man pages (apt-get update restores the lists if needed).
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb \
       "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*
echo "==> docker import as $TAG"
tar -C "$ROOTFS" -c . | $DOCKER import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["/bin/bash"]' \
    - "$TAG" >/dev/null
"$DOCKER" run --rm "$TAG" python3 --version
echo "==> base image $TAG ready"
