"""KIP-932 share groups (Kafka's `modern/share/`): the group and its members, the `simple` assignor and the
ShareGroupHeartbeat/ShareGroupDescribe handling. Pure: takes `now_ms`, returns results and `Effects`.

The share-partition state (records, locks, delivery counts) is not here: it lives beside the log in
`server/share/`.
"""
