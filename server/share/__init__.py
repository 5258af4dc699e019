"""KIP-932 share-partition state beside the log (Kafka's `SharePartition`, `SharePartitionManager`,
`ShareSessionCache`): record states and acquisition locks, delivery counts, start/end offset advance, share
sessions, the long-poll waits of ShareFetch and the persistence of share-partition state.

`partition.py` and `sessions.py` are pure (they take `now_ms`, do no I/O); `service.py` runs them: timers for
lock expiry, wake-ups on produce, and persist-then-answer through the coordinator's `StateStore`.
"""
