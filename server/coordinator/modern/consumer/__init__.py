"""KIP-848 consumer groups (Kafka's `modern/consumer`): the group, its members, reconciliation
(`CurrentAssignmentBuilder`), target assignment and the heartbeat manager the shard composes."""
