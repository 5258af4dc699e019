"""The ACL evaluation on its own: Kafka's StandardAuthorizer rules, one per test."""

from __future__ import annotations

from groupcoord.server.security.authorizer import (
    ALL,
    ALLOW,
    ALTER,
    CLUSTER,
    CLUSTER_NAME,
    DELETE,
    DENY,
    DESCRIBE,
    GROUP,
    LITERAL,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
    AclBinding,
    Authorizer,
    binding_problem,
)


def authorizer(
    *bindings: AclBinding, supers: tuple[str, ...] = (), allow_if_none: bool = False
) -> Authorizer:
    a = Authorizer(frozenset(supers), allow_if_none)
    a.bindings = list(bindings)
    return a


def acl(
    rtype: int,
    name: str,
    op: int,
    perm: int = ALLOW,
    pattern: int = LITERAL,
    who: str = "User:a",
    host: str = "*",
):  # type: ignore[no-untyped-def]
    return AclBinding(rtype, name, pattern, who, host, op, perm)


def test_no_acl_means_denied_unless_allow_everyone_if_no_acl_found() -> None:
    assert not authorizer().authorize("User:a", "1.2.3.4", READ, GROUP, "g")
    assert authorizer(allow_if_none=True).authorize("User:a", "1.2.3.4", READ, GROUP, "g")


def test_an_acl_for_someone_else_still_counts_as_an_acl_on_the_resource() -> None:
    a = authorizer(acl(GROUP, "g", READ, who="User:b"), allow_if_none=True)
    assert not a.authorize("User:a", "h", READ, GROUP, "g")


def test_super_users_are_always_allowed() -> None:
    assert authorizer(acl(GROUP, "g", ALL, DENY, who="User:*"), supers=("User:root",)).authorize(
        "User:root", "h", DELETE, GROUP, "g"
    )


def test_prefixed_literal_and_wildcard_patterns_match_as_kafka() -> None:
    a = authorizer(acl(GROUP, "team-", READ, pattern=PREFIXED), acl(TOPIC, "*", READ), acl(GROUP, "x", READ))
    assert a.authorize("User:a", "h", READ, GROUP, "team-blue")
    assert not a.authorize("User:a", "h", READ, GROUP, "tea")
    assert a.authorize("User:a", "h", READ, TOPIC, "anything")
    assert not a.authorize("User:a", "h", READ, GROUP, "xy")


def test_deny_wins_over_allow() -> None:
    a = authorizer(acl(GROUP, "team-", READ, pattern=PREFIXED), acl(GROUP, "team-secret", ALL, DENY))
    assert a.authorize("User:a", "h", READ, GROUP, "team-open")
    assert not a.authorize("User:a", "h", READ, GROUP, "team-secret")


def test_read_write_delete_alter_imply_describe_but_not_each_other() -> None:
    for op in (READ, WRITE, DELETE, ALTER):
        a = authorizer(acl(TOPIC, "t", op))
        assert a.authorize("User:a", "h", DESCRIBE, TOPIC, "t")
    assert not authorizer(acl(TOPIC, "t", READ)).authorize("User:a", "h", WRITE, TOPIC, "t")


def test_hosts_and_wildcard_principals() -> None:
    a = authorizer(acl(GROUP, "g", READ, who="User:*", host="10.0.0.1"))
    assert a.authorize("User:z", "10.0.0.1", READ, GROUP, "g")
    assert not a.authorize("User:z", "10.0.0.2", READ, GROUP, "g")


def test_authorized_operations_bits_follow_the_acls() -> None:
    a = authorizer(acl(GROUP, "g", READ))
    assert a.operations("User:a", "h", GROUP, "g") == (1 << READ) | (1 << DESCRIBE)


def test_bindings_kafka_refuses_are_refused() -> None:
    assert binding_problem(acl(CLUSTER, "other", ALTER)) is not None
    assert binding_problem(acl(CLUSTER, CLUSTER_NAME, ALTER)) is None
    assert binding_problem(AclBinding(GROUP, "g", LITERAL, "alice", "*", READ, ALLOW)) is not None
    assert binding_problem(AclBinding(GROUP, "g", 1, "User:a", "*", READ, ALLOW)) is not None


def test_write_on_some_topic_is_found_by_resource_type_unless_a_deny_covers_it() -> None:
    def by_type(*bindings: AclBinding, **kw: object) -> bool:
        return authorizer(*bindings, **kw).authorize_by_resource_type("User:a", "h", WRITE, TOPIC)  # type: ignore[arg-type]

    assert by_type(acl(TOPIC, "orders", WRITE))
    assert by_type(acl(TOPIC, "ord", WRITE, pattern=PREFIXED))
    assert not by_type(acl(TOPIC, "orders", READ))
    assert not by_type(acl(TOPIC, "orders", WRITE, who="User:b"))
    assert not by_type(acl(TOPIC, "orders", WRITE), acl(TOPIC, "orders", WRITE, DENY))
    assert not by_type(acl(TOPIC, "orders", WRITE), acl(TOPIC, "or", ALL, DENY, pattern=PREFIXED))
    assert not by_type(acl(TOPIC, "orders", WRITE), acl(TOPIC, "*", WRITE, DENY))
    assert by_type(acl(TOPIC, "orders", WRITE), acl(TOPIC, "audit", WRITE, DENY))
    assert by_type(acl(TOPIC, "*", WRITE))
    assert by_type(supers=("User:a",))
    assert by_type(allow_if_none=True)
    assert not by_type()
