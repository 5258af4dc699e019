"""The default group_protocol="classic" is aiokafka unchanged (JoinGroup/SyncGroup), and bad settings are
refused before anything connects."""

from __future__ import annotations

import pytest

from groupcoord.aio import AIOKafkaConsumer
from tests.aio.members import produce, until

pytestmark = [pytest.mark.integration]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="group_protocol"):
        AIOKafkaConsumer(group_id="g", group_protocol="eager")
    with pytest.raises(ValueError, match="group_remote_assignor"):
        AIOKafkaConsumer(group_id="g", group_remote_assignor="uniform")
    with pytest.raises(ValueError, match="group_id"):
        AIOKafkaConsumer(group_protocol="consumer")


async def test_classic_default_consumes_as_aiokafka(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:2")
    await produce(srv.bootstrap, "t", [b"x", b"y"], 2)
    c = AIOKafkaConsumer("t", bootstrap_servers=srv.bootstrap, group_id="g", auto_offset_reset="earliest")
    await c.start()
    try:
        assert c.group_protocol == "classic" and c.member_epoch is None
        got: list[bytes] = []
        while len(got) < 2:
            got.append((await c.getone()).value)
        assert sorted(got) == [b"x", b"y"]
        await until(lambda: c._coordinator.generation > 0, what="classic generation")
    finally:
        await c.stop()
