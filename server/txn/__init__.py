"""The transaction coordinator (KIP-98/KIP-447): a pure state machine (`state.py`) and the service that
persists its records, writes the markers and completes the groups' transactional offsets (`service.py`)."""
