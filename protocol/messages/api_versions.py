"""ApiVersions (API key 18), versions 0-5; flexible from v3.

Declared from Kafka's `ApiVersionsRequest.json` / `ApiVersionsResponse.json`.

Request:
- v0-v2: empty body.
- v3: first flexible version; adds ClientSoftwareName and ClientSoftwareVersion.
- v4: same layout as v3 (KAFKA-17011: SupportedFeatures.MinVersion may now be 0 in the response).
- v5: adds ClusterId (nullable, default null) and NodeId (default -1), both ignorable (KIP-1242): the node
  the client means to reach; a mismatch is answered REBOOTSTRAP_REQUIRED.

Response:
- v0: ErrorCode, ApiKeys[] {ApiKey, MinVersion, MaxVersion}.
- v1: adds ThrottleTimeMs (after ApiKeys).
- v2: same layout as v1 (brokers answer before throttling).
- v3: first flexible version; adds the tagged fields SupportedFeatures (tag 0), FinalizedFeaturesEpoch
  (tag 1, default -1), FinalizedFeatures (tag 2) and ZkMigrationReady (tag 3).
- v4: same layout as v3.
- v5: same layout as v3 (REBOOTSTRAP_REQUIRED may be returned).

The response header is always v0, even for flexible versions (the client must be able to read it before it
knows which version the broker answered with).
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT16, INT32, INT64, STRING, array, f, message, struct


@message(18, "request", valid="0-5", flexible="3+")
class ApiVersionsRequest:
    client_software_name: str = f(STRING, "3+", ignorable=True)
    client_software_version: str = f(STRING, "3+", ignorable=True)
    cluster_id: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)
    node_id: int = f(INT32, "5+", default=-1, ignorable=True)


@struct
class ApiVersion:
    api_key: int = f(INT16, "0+")
    min_version: int = f(INT16, "0+")
    max_version: int = f(INT16, "0+")


@struct
class SupportedFeatureKey:
    name: str = f(STRING, "3+")
    min_version: int = f(INT16, "3+")
    max_version: int = f(INT16, "3+")


@struct
class FinalizedFeatureKey:
    name: str = f(STRING, "3+")
    max_version_level: int = f(INT16, "3+")
    min_version_level: int = f(INT16, "3+")


@message(18, "response", valid="0-5", flexible="3+")
class ApiVersionsResponse:
    error_code: int = f(INT16, "0+")
    api_keys: tuple[ApiVersion, ...] = f(array(ApiVersion), "0+")
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    supported_features: tuple[SupportedFeatureKey, ...] = f(
        array(SupportedFeatureKey), "3+", tag=0, tagged_versions="3+", ignorable=True
    )
    finalized_features_epoch: int = f(INT64, "3+", default=-1, tag=1, tagged_versions="3+", ignorable=True)
    finalized_features: tuple[FinalizedFeatureKey, ...] = f(
        array(FinalizedFeatureKey), "3+", tag=2, tagged_versions="3+", ignorable=True
    )
    zk_migration_ready: bool = f(BOOL, "3+", default=False, tag=3, tagged_versions="3+", ignorable=True)
