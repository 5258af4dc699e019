"""The errors that end a :class:`~groupcoord.membership.GroupMember`, each naming its cause.

A member retries what can heal by itself (a rebalance, a moved coordinator, a lost connection) and ends with
one of these for what cannot: a non-retriable coordinator error, a leader whose assignor fails or produces an
assignment that breaks "one owner per resource", and a bootstrap address that cannot work.
"""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode


class MembershipError(RuntimeError):
    """Membership ended. ``code`` is the coordinator's error code when the coordinator refused us, else None.

    ``MembershipError("JoinGroup", 23)`` reads "JoinGroup failed: INCONSISTENT_GROUP_PROTOCOL (23)";
    ``MembershipError("some message")`` carries the message as it is.
    """

    code: int | None

    def __init__(self, what: str, code: int | None = None) -> None:
        if code is None:
            super().__init__(what)
        else:
            try:
                name = ErrorCode(code).name
            except ValueError:
                name = str(code)
            super().__init__(f"{what} failed: {name} ({code})")
        self.code = code


class AssignorError(MembershipError):
    """The leader's assignor raised, or its assignment was refused (unknown member ids, resources left
    unowned or given twice). The leader leaves the group so that another member can lead at once."""


class BootstrapError(MembershipError):
    """The bootstrap address cannot work (its host does not resolve); retrying would only hide the cause."""
