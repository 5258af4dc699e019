"""KIP-848 consumer groups and KIP-932 share groups, beside the classic machinery (Kafka's `modern/`)."""
