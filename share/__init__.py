"""``groupcoord.share``: an asyncio share consumer (KIP-932, queues for Kafka).

Many consumers read the same partitions; each record is acquired under a time lock, delivered with its
delivery count, and acknowledged one by one (ACCEPT, RELEASE, REJECT). Written against the Kafka protocol
(ShareGroupHeartbeat, ShareFetch, ShareAcknowledge, FindCoordinator, Metadata, ApiVersions), so it works with
groupcoord and Apache Kafka >= 4.2 alike. Depends only on :mod:`groupcoord.protocol`, the connection of
:mod:`groupcoord.membership`, and asyncio. See docs/share-consumer.md.
"""

from groupcoord.share.acks import AcknowledgeType, ShareRecord
from groupcoord.share.consumer import ShareConsumer
from groupcoord.share.errors import ShareConsumerError, ShareStateError
from groupcoord.share.records import RecordDecodeError

__all__ = [
    "AcknowledgeType",
    "RecordDecodeError",
    "ShareConsumer",
    "ShareConsumerError",
    "ShareRecord",
    "ShareStateError",
]
