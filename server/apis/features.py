"""The feature flags ApiVersions (v3+) advertises: SupportedFeatures, FinalizedFeatures, FinalizedFeaturesEpoch.

A 4.x client acts on a finalized level: the Java producer uses the transaction protocol of KIP-890 part 2
(an epoch bump per transaction, Produce v12 adding partitions implicitly) only when `transaction.version` is
finalized at 2, `kafka-features describe` and `Admin.describeFeatures()` print what is here, and share and
streams clients expect the RPCs their level enables. So each row says the highest level whose promise
groupcoord serves, and only that; `FEATURES` is the one place to change it (a new capability adds or raises
its row, e.g. `streams.version` 1 with KIP-1071's streams groups).

What each level promises (Kafka 4.4's `server-common/.../server/common/*Version.java`) and what we advertise:
- metadata.version: the KRaft metadata ladder, 7 (3.3-IV3) .. 33 (4.4-IV2). Finalized at 30 (4.3-IV0, Kafka
  4.4's latest production level): 4.4-IV0 enables the share groups' dead-letter queue (KIP-1191) and 4.4-IV1
  CIDR ACL host patterns (KIP-1276), neither served; 4.3-IV0's cordoned log dirs are answered (never cordoned).
- kraft.version 1 (KIP-853) promises dynamic voters (AddRaftVoter/RemoveRaftVoter, 80/81): not served, so
  supported 0..0 and not finalized.
- group.version 1: the consumer rebalance protocol (KIP-848).
- share.version 1: share groups (KIP-932); 2 adds the dead-letter queue (KIP-1191), not served.
- streams.version 1: streams groups (KIP-1071), advertised once StreamsGroupHeartbeat/Describe (88/89) are.
- transaction.version 1: the coordinator's flexible transaction state records (KIP-890; nothing a client sees);
  2 (epoch bump per transaction, implicit AddPartitionsToTxn) is not served, so clients keep the v1 protocol.
- eligible.leader.replicas.version 1 (KIP-966): ELR fields in DescribeTopicPartitions; with one replica per
  partition the ELR lists are always empty. Advertised once DescribeTopicPartitions (75) is served.

A level above 0 is advertised only while every API its row `requires` has a handler (e.g. share.version is
0..0 with `--group-share-enable false`); finalized levels above 0 are listed (Kafka stores no level 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from groupcoord.protocol.messages.api_versions import FinalizedFeatureKey, SupportedFeatureKey


@dataclass(frozen=True)
class Feature:
    """One feature flag: the levels groupcoord supports, finalized at `level` when `requires` is served."""

    name: str
    #: the highest level served (and the finalized one); 0: known, not enabled
    level: int
    #: API keys every level above 0 needs (ints: some are not in `ApiKey` until their API is served)
    requires: tuple[int, ...] = ()
    #: the lowest supported level (Kafka: 0, or metadata.version's MINIMUM_VERSION 7 = 3.3-IV3)
    min_level: int = 0


FEATURES: tuple[Feature, ...] = (
    Feature("metadata.version", 30, min_level=7),
    Feature("kraft.version", 0),
    # ConsumerGroupHeartbeat, ConsumerGroupDescribe
    Feature("group.version", 1, requires=(68, 69)),
    # ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
    Feature("share.version", 1, requires=(76, 77, 78, 79)),
    # StreamsGroupHeartbeat, StreamsGroupDescribe (KIP-1071): level 1 lights up once streams groups are served
    Feature("streams.version", 1, requires=(88, 89)),
    Feature("transaction.version", 1),
    # DescribeTopicPartitions
    Feature("eligible.leader.replicas.version", 1, requires=(75,)),
)


@dataclass(frozen=True)
class Features:
    """What one ApiVersions answer carries."""

    supported: tuple[SupportedFeatureKey, ...]
    finalized: tuple[FinalizedFeatureKey, ...]
    #: grows with every finalized level a release adds (the sum of the levels), so a client that met an
    #: older node keeps the newer view, as Kafka's NetworkClient keeps the highest epoch's features
    epoch: int


@lru_cache(maxsize=8)
def features_for(served: frozenset[int]) -> Features:
    """The features advertised by a node whose handlers serve the API keys `served`."""
    supported, finalized = [], []
    for f in FEATURES:
        level = f.level if all(k in served for k in f.requires) else 0
        level = max(level, f.min_level)
        supported.append(SupportedFeatureKey(name=f.name, min_version=f.min_level, max_version=level))
        if level > 0:
            finalized.append(
                FinalizedFeatureKey(name=f.name, max_version_level=level, min_version_level=level)
            )
    return Features(tuple(supported), tuple(finalized), sum(k.max_version_level for k in finalized))


def supported_for_version(features: Features, version: int) -> tuple[SupportedFeatureKey, ...]:
    """Below ApiVersions v4 a supported feature whose minimum is 0 is left out: older clients cannot read it
    (KAFKA-17492; Kafka's `ApiVersionsResponse.maybeFilterSupportedFeatureKeys`)."""
    if version >= 4:
        return features.supported
    return tuple(k for k in features.supported if k.min_version != 0)
