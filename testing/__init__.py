"""groupcoord.testing: a real coordinator for your consumer-group tests, with a clock you move.

`pip install groupcoord[testing]` registers the pytest plugin (fixtures `groupcoord`, `groupcoord_factory`,
`groupcoord_session`); `start_groupcoord` / `spawn_groupcoord` work without pytest. See docs/testing.md.
"""

from groupcoord.server.control import GroupView, MemberView
from groupcoord.testing.inprocess import GroupCoord, start_groupcoord
from groupcoord.testing.remote import GroupCoordProcess, RemoteEventStream, RemoteFault, spawn_groupcoord

__all__ = [
    "GroupCoord",
    "GroupCoordProcess",
    "GroupView",
    "MemberView",
    "RemoteEventStream",
    "RemoteFault",
    "spawn_groupcoord",
    "start_groupcoord",
]
