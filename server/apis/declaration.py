"""One declaration per API, beside its handler (issue 40): everything the broker needs to know of an API.

Each API module ends with `APIS = (Api(...), ...)`, one `Api` per key it handles; `server.apis.catalog`
collects them and the broker builds the dispatcher's tables from them (handlers, ACL checks, the answers
while loading, cluster routing, fast lanes, feature gates). Adding an API is its codec module in
`protocol/messages/` plus one declaration (docs/architecture.md, "How to add an API").

What a declaration says, and what reads it:
- `handler`: `handler(ctx, request) -> response` (or a future of one), as the dispatcher calls it;
- `check`: the ACL check wrapped around the handler when an authorizer is configured (`server/apis/authz*.py`);
  None is deny by default: only `super.users` may use the API then (docs/differences.md 49);
- `before_check`: wrappers put in front of the ACL check (OffsetCommit/OffsetFetch v10 resolve topic ids
  first, `topic_ids.py`), with or without an authorizer;
- `groups`: the group ids a request names (version, request) -> ids. An API that has them is routed in
  cluster mode to the node that owns each group's shard (`routing.py`), and needs `while_loading`;
- `txn_ids`: the transactional ids a request names; the handler answers each id NOT_COORDINATOR or
  COORDINATOR_LOAD_IN_PROGRESS itself (`txn_routing.txn_status`), per id as Kafka does;
- `while_loading`: the whole request answered with one error code (ctx, request, code) -> response. While the
  state loads it answers with COORDINATOR_LOAD_IN_PROGRESS instead of the handler; in cluster mode it is also
  the NOT_COORDINATOR answer for a group served elsewhere. None: the API is handled as usual while loading;
- `fast_lane`: the pre-encoded path for the hottest requests (issue 28), only where no ACL check wraps;
- `feature`: the feature that gates the API ("share": offered only with `group.share.enable`);
- `coordinator`: a client sends it to its group coordinator, so the test controls' "coordinator
  unavailable" fault takes it (`server/control/faults.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.net.dispatch import FastLane, Handler, RequestContext

#: an ACL check: the handler with the authorizer's question in front (and its answer patched in)
Check = Callable[[Handler], Handler]
#: (version, request) -> the ids it names
Ids = Callable[[int, Any], Sequence[str]]
#: (ctx, request, error code) -> the response that answers the whole request with that code
ErrorAnswer = Callable[[RequestContext, Any, ErrorCode], Any]
#: what may gate an API (the broker says which are on)
Feature = Literal["share"]


@dataclass(frozen=True, kw_only=True)
class Api:
    """One API as the broker serves it (see the module docstring for each field)."""

    key: ApiKey
    handler: Handler
    check: Check | None = None
    before_check: tuple[Check, ...] = ()
    groups: Ids | None = None
    txn_ids: Ids | None = None
    while_loading: ErrorAnswer | None = None
    fast_lane: FastLane | None = None
    feature: Feature | None = None
    coordinator: bool = False


def by_group_id(version: int, req: Any) -> Sequence[str]:
    """The one group of a request with a `group_id` (JoinGroup, SyncGroup, OffsetCommit, ...)."""
    return (req.group_id,)


def by_group_ids(version: int, req: Any) -> Sequence[str]:
    """The groups of a request with a `group_ids` list (ConsumerGroupDescribe, ShareGroupDescribe)."""
    return tuple(req.group_ids)


def by_transactional_id(version: int, req: Any) -> Sequence[str]:
    """The one transactional id of a request (EndTxn, AddOffsetsToTxn, ...); none when it is null."""
    tid = req.transactional_id
    return () if tid is None else (tid,)


def answering(api: Api, code: ErrorCode) -> Handler:
    """A handler that answers the whole request with `code` (the API's `while_loading` answer)."""
    answer = api.while_loading
    assert answer is not None
    return lambda ctx, req: answer(ctx, req, code)
