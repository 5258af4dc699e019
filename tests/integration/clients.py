"""Every client driver of the shared group scenarios (`test_group_scenarios.py`), by the id its cases run under:
the in-process Python clients (`python_clients.py`) and the Java client and kafkajs as driver processes
(`process_clients.py`), all implementing `client_api.GroupClient`.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.integration.client_api import GroupClient
from tests.integration.process_clients import JavaClient, KafkajsClient
from tests.integration.python_clients import Aiokafka, Confluent, KafkaPython

#: every client driver, by the id its scenarios run under
CLIENTS: dict[str, Callable[[], GroupClient]] = {
    "aiokafka": Aiokafka,
    "kafka-python": KafkaPython,
    "confluent-kafka": Confluent,
    "java": JavaClient,
    "kafkajs": KafkajsClient,
}

#: the clients whose consumers can be static members (group.instance.id); kafkajs never sends one
STATIC_MEMBERSHIP = [name for name in CLIENTS if name != "kafkajs"]
