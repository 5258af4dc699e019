"""`groupcoord probe`: the container HEALTHCHECK, "ready" rather than "the port accepts a connection".

Ready means both: the coordinator state is loaded (GET /ready on the metrics listener answers 200, when that
listener is on) and the Kafka listener answers an ApiVersions request with error 0. A TCP connect alone is
true long before a restarted server has replayed its state, and clients that join then get
COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import urllib.error
import urllib.request

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.server.net.listeners import parse_endpoints

API_VERSIONS = 18


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Kafka listener to ask (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=default_port(),
        help="default: the first of GROUPCOORD_LISTENERS, else GROUPCOORD_PORT, else 9092",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=int(os.environ.get("GROUPCOORD_METRICS_PORT", "0")),
        help="the /ready listener; 0 skips that check (GROUPCOORD_METRICS_PORT)",
    )
    parser.add_argument("--timeout", type=float, default=3.0)


def default_port() -> int:
    listeners = os.environ.get("GROUPCOORD_LISTENERS")
    if listeners:
        return parse_endpoints(listeners, "listeners")[0].port
    return int(os.environ.get("GROUPCOORD_PORT", "9092"))


def api_versions_ok(host: str, port: int, timeout: float) -> bool:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_request(API_VERSIONS, 0, 1, ApiVersionsRequest(), client_id="groupcoord-probe"))
        size = struct.unpack(">i", _read(sock, 4))[0]
        correlation, body = decode_response(_read(sock, size), API_VERSIONS, 0)
    return correlation == 1 and body.error_code == 0


def _read(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed by the server")
        out += chunk
    return bytes(out)


def state_loaded(port: int, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=timeout) as resp:
            return resp.status == 200
    except urllib.error.HTTPError:
        return False


def run_probe(args: argparse.Namespace) -> int:
    try:
        if args.metrics_port and not state_loaded(args.metrics_port, args.timeout):
            print("not ready: coordinator state not loaded yet", file=sys.stderr)
            return 1
        if not api_versions_ok(args.host, args.port, args.timeout):
            print("not ready: ApiVersions answered with an error", file=sys.stderr)
            return 1
    except OSError as exc:
        print(f"not ready: {exc}", file=sys.stderr)
        return 1
    print("ready")
    return 0
