"""KIP-1071 streams groups (`group.protocol=streams`): StreamsGroupHeartbeat and StreamsGroupDescribe, the
topology and its internal topics, the sticky task assignor. Pure: works inside the shard's operation
(`OperationContext`) and returns results; records and timers go out through its `Effects`."""
