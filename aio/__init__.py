"""groupcoord.aio: aiokafka's AIOKafkaConsumer with ``group_protocol="consumer"`` (KIP-848) for asyncio.

``from groupcoord.aio import AIOKafkaConsumer`` is a drop-in for ``aiokafka.AIOKafkaConsumer``: the default
``group_protocol="classic"`` is aiokafka unchanged; ``"consumer"`` speaks ConsumerGroupHeartbeat to Kafka >= 4.0
or groupcoord (docs/aiokafka-consumer-protocol.md).
"""

from aiokafka.abc import ConsumerRebalanceListener

from groupcoord.aio.consumer import AIOKafkaConsumer
from groupcoord.aio.coordinator import ConsumerProtocolCoordinator

__all__ = ["AIOKafkaConsumer", "ConsumerProtocolCoordinator", "ConsumerRebalanceListener"]
