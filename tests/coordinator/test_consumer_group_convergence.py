"""Random joins, leaves and subscription changes of well-behaved clients (each reports exactly what it was last
given): at no step do two members own a partition, and once the group is quiet it converges to Stable with
every subscribed partition owned exactly once and the clients agreeing with the coordinator."""

from __future__ import annotations

import itertools

from consumer_group_harness import BAR, FOO, Harness
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol.errors import ErrorCode as E

ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["join", "leave", "hb", "sub"]),
        st.integers(0, 4),
        st.sampled_from(["foo", "bar", "both"]),
    ),
    min_size=1,
    max_size=25,
)
TOPICS = {"foo": ("foo",), "bar": ("bar",), "both": ("foo", "bar")}


class Client:
    def __init__(self, name: str) -> None:
        self.name = name
        self.epoch = 0
        self.owned: dict = {}


def step(h: Harness, c: Client, topics: tuple[str, ...] | None = None) -> None:
    r = h.hb(c.name, c.epoch, topics=topics, owned={t: frozenset(p) for t, p in c.owned.items()})
    if r.error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
        c.epoch, c.owned = 0, {}
        return
    assert r.error == E.NONE, r
    c.epoch = r.member_epoch
    if r.assignment is not None:
        c.owned = {t: set(p) for t, p in r.assignment.items() if p}


def no_double_owner(clients: dict[str, Client]) -> None:
    seen: set = set()
    for c in clients.values():
        for t, ps in c.owned.items():
            for p in ps:
                assert (t, p) not in seen, (t, p)
                seen.add((t, p))


@settings(max_examples=60, deadline=None)
@given(ACTIONS, st.sampled_from(["uniform", "range"]))
def test_random_membership_converges_without_double_ownership(actions, assignor) -> None:  # type: ignore[no-untyped-def]
    h = Harness()
    clients: dict[str, Client] = {}
    subs: dict[str, tuple[str, ...]] = {}
    for action, i, topics in actions:
        name = f"m{i}"
        if action == "join" and name not in clients:
            c = clients[name] = Client(name)
            subs[name] = TOPICS[topics]
            r = h.hb(name, 0, topics=TOPICS[topics], assignor=assignor)
            assert r.error == E.NONE
            c.epoch = r.member_epoch
            c.owned = {t: set(p) for t, p in (r.assignment or {}).items() if p}
        elif action == "leave" and name in clients:
            h.hb(name, -1)
            del clients[name], subs[name]
        elif action == "sub" and name in clients:
            subs[name] = TOPICS[topics]
            step(h, clients[name], TOPICS[topics])
        elif name in clients:
            step(h, clients[name])
        no_double_owner(clients)
    for _ in range(8):
        for c in list(clients.values()):
            step(h, c)
            no_double_owner(clients)
    g = h.group()
    if not clients:
        assert g is None or g.state == "Empty"
        return
    assert g.state == "Stable", [(m.member_id, m.state, m.member_epoch) for m in g.members.values()]
    wanted = set()
    for s in subs.values():
        for t in s:
            tid = FOO if t == "foo" else BAR
            wanted |= {(tid, p) for p in range(6 if t == "foo" else 3)}
    owned = [(t, p) for c in clients.values() for t, ps in c.owned.items() for p in ps]
    assert sorted(owned, key=str) == sorted(wanted, key=str)
    for c in clients.values():
        assert {t: set(p) for t, p in g.members[c.name].assigned.items() if p} == c.owned


REQUESTS = st.fixed_dictionaries(
    {
        "member_id": st.sampled_from(["", " ", "m0", "m1", "m2"]),
        "epoch": st.integers(-4, 6),
        "topics": st.none() | st.lists(st.sampled_from(["foo", "bar", "ghost", ""]), max_size=3).map(tuple),
        "owned": st.none()
        | st.dictionaries(
            st.sampled_from([FOO, BAR]), st.frozensets(st.integers(-2, 8), max_size=4), max_size=2
        ),
        "instance_id": st.none() | st.sampled_from(["", "i1", "i2"]),
        "rebalance_timeout_ms": st.sampled_from([-1, 0, 5, 300000]),
        "assignor": st.none() | st.sampled_from(["uniform", "range", "sticky"]),
        "version": st.sampled_from([0, 1]),
        "regex": st.none() | st.sampled_from(["", "fo.*", "ba.*|foo", "("]),
    }
)


@settings(max_examples=150, deadline=None)
@given(st.lists(REQUESTS, min_size=1, max_size=30), st.lists(st.integers(0, 50_000), min_size=1, max_size=5))
def test_any_heartbeat_is_answered_and_the_group_stays_consistent(reqs, waits) -> None:  # type: ignore[no-untyped-def]
    """Arbitrary (also invalid) heartbeats and timer expiries: every request gets a result with a Kafka error
    code, and the partition-epoch index always matches the members' partitions."""
    h = Harness()
    for i, r in enumerate(reqs):
        result = h.hb(
            r["member_id"],
            r["epoch"],
            topics=r["topics"],
            owned=r["owned"],
            instance_id=r["instance_id"],
            rebalance_timeout_ms=r["rebalance_timeout_ms"],
            assignor=r["assignor"],
            version=r["version"],
            regex=r["regex"],
        )
        assert result.error in {int(e) for e in E}
        if result.error:
            assert result.member_epoch == 0 and result.assignment is None
        h.advance(waits[i % len(waits)])
        g = h.group()
        if g is None:
            continue
        # the journal's state_change events chain, and end at the group's state (docs/journal.md)
        assert g.journaled_state == g.state
        changes = [(e["state_from"], e["state_to"]) for e in h.events if e["event"] == "state_change"]
        assert all(a[1] == b[0] for a, b in itertools.pairwise(changes))
        assert not changes or changes[-1][1] == g.state
        owners: dict = {}
        for m in g.members.values():
            for a in (m.assigned, m.pending_revocation):
                for t, ps in a.items():
                    for p in ps:
                        assert (t, p) not in owners, "two owners"
                        owners[(t, p)] = m.member_epoch
        assert owners == g._partition_epochs
