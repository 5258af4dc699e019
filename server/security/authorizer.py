"""ACL bindings and their evaluation, as Kafka's StandardAuthorizer (KIP-801) decides.

- a request is allowed for a super user (`super.users`), or when an ALLOW binding matches and no DENY does:
  DENY wins;
- a binding matches the resource when its pattern is LITERAL with the same name or the wildcard `*`, or
  PREFIXED with a prefix of the name; the principal when equal or `User:*`; the host when equal or `*`;
  the operation when equal or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and of
  ALTER_CONFIGS also DESCRIBE_CONFIGS (Kafka's implied operations);
- when no binding at all matches the resource, `allow.everyone.if.no.acl.found` decides (false by default).

The codes are Kafka's (`ResourceType`, `PatternType`, `AclOperation`, `AclPermissionType`).
"""

from __future__ import annotations

from dataclasses import dataclass

# ResourceType
ANY_RESOURCE, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 1, 2, 3, 4, 5
RESOURCE_TYPES = {TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, 6, 7}
# PatternType
ANY_PATTERN, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
# AclOperation
ANY_OP, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
OPERATIONS = set(range(2, 15))
# AclPermissionType
ANY_PERMISSION, DENY, ALLOW = 1, 2, 3
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"

_IMPLIED = {DESCRIBE: {READ, WRITE, DELETE, ALTER}, DESCRIBE_CONFIGS: {ALTER_CONFIGS}}
#: the operations each resource type knows, for authorized-operations bit sets (Kafka's per-type lists)
TYPE_OPERATIONS = {
    TOPIC: (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DELETE, DESCRIBE),
    CLUSTER: (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE),
}


@dataclass(frozen=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def to_json(self) -> list[object]:
        return [
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission,
        ]

    @classmethod
    def from_json(cls, row: list) -> AclBinding:  # type: ignore[type-arg]
        return cls(int(row[0]), str(row[1]), int(row[2]), str(row[3]), str(row[4]), int(row[5]), int(row[6]))


def binding_problem(b: AclBinding) -> str | None:
    """Why CreateAcls refuses a binding (Kafka answers INVALID_REQUEST with this), or None."""
    if b.resource_type not in (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID):
        return f"Invalid resource type {b.resource_type}"
    if b.pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid pattern type {b.pattern_type}: only LITERAL and PREFIXED bindings can be created"
    if b.operation not in OPERATIONS:
        return f"Invalid operation {b.operation}"
    if b.permission not in (DENY, ALLOW):
        return f"Invalid permission type {b.permission}"
    if not b.resource_name:
        return "Resource name must not be empty"
    if b.resource_type == CLUSTER and b.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not b.principal.partition(":")[2] or ":" not in b.principal:
        return f"Could not parse principal from `{b.principal}` (no colon is present separating the type and name)"
    return None


@dataclass(frozen=True)
class AclFilter:
    """DescribeAcls/DeleteAcls: None or ANY fields match everything; MATCH patterns match as a request would."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ANY_RESOURCE and self.resource_type != b.resource_type:
            return False
        if self.pattern_type == MATCH:
            if self.resource_name is not None and not _pattern_covers(b, self.resource_name):
                return False
        else:
            if self.pattern_type != ANY_PATTERN and self.pattern_type != b.pattern_type:
                return False
            if self.resource_name is not None and self.resource_name != b.resource_name:
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != ANY_OP and self.operation != b.operation:
            return False
        return self.permission == ANY_PERMISSION or self.permission == b.permission


def _pattern_covers(b: AclBinding, name: str) -> bool:
    if b.pattern_type == LITERAL:
        return b.resource_name == name or b.resource_name == WILDCARD
    return b.pattern_type == PREFIXED and name.startswith(b.resource_name)


class Authorizer:
    def __init__(self, super_users: frozenset[str], allow_if_no_acl: bool) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self.bindings: list[AclBinding] = []

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        on_resource = [
            b for b in self.bindings if b.resource_type == resource_type and _pattern_covers(b, name)
        ]
        if not on_resource:
            return self.allow_if_no_acl
        allowed = False
        for b in on_resource:
            if b.principal not in (principal, "User:*") or b.host not in (host, WILDCARD):
                continue
            if b.permission == DENY and b.operation in (operation, ALL):
                return False
            if b.permission == ALLOW and (
                b.operation in (operation, ALL) or b.operation in _IMPLIED.get(operation, ())
            ):
                allowed = True
        return allowed

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        """Whether some resource of the type allows the operation (Kafka's `Authorizer.authorizeByResourceType`).

        InitProducerId uses it for idempotent producers (WRITE on any topic, KIP-679). As Kafka's default: a
        super user (or a principal the no-ACL rule lets in) is allowed through a made-up name; a wildcard DENY
        refuses; an ALLOW counts unless a DENY of the same literal name or of a prefix of it overrides it.
        """
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allows: list[tuple[int, str]] = []
        for b in self.bindings:
            if b.resource_type != resource_type or b.host not in (host, WILDCARD):
                continue
            if b.principal not in (principal, "User:*") or b.operation not in (operation, ALL):
                continue
            if b.permission == DENY:
                if b.pattern_type == LITERAL and b.resource_name == WILDCARD:
                    return False
                (deny_literal if b.pattern_type == LITERAL else deny_prefixed).add(b.resource_name)
            elif b.permission == ALLOW:
                if b.pattern_type == LITERAL and b.resource_name == WILDCARD:
                    return True
                allows.append((b.pattern_type, b.resource_name))
        for pattern, name in allows:
            if pattern == LITERAL and name in deny_literal:
                continue
            if not any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                return True
        return False

    def operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The authorized-operations bit set Kafka returns for a resource (bit n = AclOperation n)."""
        return sum(
            1 << op
            for op in TYPE_OPERATIONS.get(resource_type, ())
            if self.authorize(principal, host, op, resource_type, name)
        )
