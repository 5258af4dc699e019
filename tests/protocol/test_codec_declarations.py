"""Every declaration against Kafka's JSON message definitions (as bundled with kafka-python 3.0).

kafka-python bundles a newer Kafka release than the one our declarations were written from (apache/kafka,
October 2024). The newer JSON dropped old versions (e.g. CreateTopics starts at v2) and marks topic names
ignorable where v13+ replaced them with ids; neither changes the wire format of the versions we declare, so
`compare_message` checks only the versions both declare and compares `ignorable` only where it changes what
may be written.
"""

from __future__ import annotations

import pytest
from codec_helpers import ALL_MESSAGES
from codec_kafka_json import compare_message, load_kafka_json


@pytest.mark.parametrize("cls", [pytest.param(c, id=c.__name__) for c in ALL_MESSAGES])
def test_declaration_matches_kafka_json(cls: type) -> None:
    problems = compare_message(cls, load_kafka_json(cls.__name__))
    assert not problems, "\n".join(problems)
