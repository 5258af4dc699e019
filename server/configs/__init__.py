"""Topic and broker configs as Kafka has them: definitions, validation, effective values, durable storage."""
