"""Topic and group names for tests that may share one server.

With GROUPCOORD_BOOTSTRAP set (the compose run, or one local server for the whole suite), every test talks
to the same coordinator, which keeps what earlier tests left behind: topics, groups, committed offsets. A
fixed name (`orders`, `g1`) then collides with a leftover (CreateTopics answers TOPIC_ALREADY_EXISTS) or
reads someone else's state, so shared-server tests name what they create with `unique(...)` and check only
their own names in listings.
"""

from __future__ import annotations

import uuid


def unique(base: str) -> str:
    """`base` plus a short random suffix: a valid topic and group name, different in every call."""
    return f"{base}-{uuid.uuid4().hex[:10]}"
