"""The two targets a differential scenario runs against: Kafka 4.4 (tests/oracle/kafka.py) and groupcoord
(tests/conftest.py's ServerProcess, started with the same settings), behind one small interface so a scenario
is written once. The session fixtures that give them live in tests/conftest.py: `kafka_oracle` (the broker),
`groupcoord_peer` (our server), `oracle_target` (either, parametrized) and `oracle_pair` (both)."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from tests.integration.helpers import RawClient
from tests.oracle import kafka

KAFKA = "kafka"
GROUPCOORD = "groupcoord"


@dataclass
class Target:
    """One server a scenario talks to. `name` is "kafka" or "groupcoord"."""

    name: str
    host: str
    port: int
    _names: itertools.count[int] = field(default_factory=itertools.count, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def raw(self, timeout: float = 30.0) -> RawClient:
        return RawClient(self.host, self.port, timeout=timeout)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        """Create it and wait until Metadata lists it with every partition led."""
        kafka.create_topic(self.host, self.port, name, partitions, configs)

    def wait_coordinator(self, key: str, key_type: int = 0) -> None:
        kafka.wait_coordinator(self.host, self.port, key, key_type)

    def unique(self, prefix: str) -> str:
        """A group or topic name no other test on this target's (shared, session-long) server has used."""
        return f"{prefix}-{os.getpid()}-{next(self._names)}"
