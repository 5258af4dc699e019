"""Small helpers for black-box tests against the real server."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from protocol.codec import decode_response, encode_request


async def wait_for(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(step)


def wait_for_sync(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def exact_cover(assignments: Iterable[Iterable[tuple[str, int]]], expected: set[tuple[str, int]]) -> bool:
    """Every expected partition assigned exactly once, and nothing else."""
    seen: list[tuple[str, int]] = [tp for a in assignments for tp in a]
    return len(seen) == len(set(seen)) and set(seen) == expected


async def gather_bounded(aws: Iterable[Awaitable[Any]], timeout: float) -> list[Any]:
    return await asyncio.wait_for(asyncio.gather(*aws), timeout)


class RawClient:
    """A blocking raw-protocol client: pre-encoded frames in, decoded responses out."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.correlation = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read(4))[0]
        return self._read(size)

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by server")
            out += chunk
        return bytes(out)

    def request(self, api_key: int, version: int, body: Any) -> Any:
        self.correlation += 1
        self.send_raw(encode_request(api_key, version, self.correlation, body, client_id="raw-test"))
        corr, resp = decode_response(self.read_frame(), api_key, version)
        assert corr == self.correlation
        return resp

    def is_closed_by_server(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()
