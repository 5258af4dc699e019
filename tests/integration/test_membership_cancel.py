"""Cancellation of the membership library's requests: a member's stop() cancels its loop while a request may
be answered in the same event-loop turn. Python 3.11's asyncio.wait_for then returns the answer and swallows
the cancellation, and stop() waited forever for a loop that went on (seen once in `make test`: a static
member stopped right after a rebalance). The connection uses asyncio.timeout, which lets it through."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.membership.connection import Connection
from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest


async def test_a_request_cancelled_as_its_answer_arrives_stays_cancelled() -> None:
    received = asyncio.Event()

    async def silent_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)  # the request arrived; the answer is set by the test below
        received.set()
        await reader.read()  # until the client closes
        writer.close()

    server = await asyncio.start_server(silent_broker, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    conn = await Connection.open(host, port, "cancel-test")
    try:
        task = asyncio.create_task(conn.request(ApiKey.HEARTBEAT, 4, HeartbeatRequest("g", 1, "m", None), 30))
        await asyncio.wait_for(received.wait(), 30)
        ((answer, _, _),) = conn.pending.values()
        answer.set_result("the answer")  # the response lands in the same turn as the cancellation
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await conn.close()
        server.close()
        await server.wait_closed()
