"""A differential fuzzer: hypothesis draws sequences of KIP-848 group requests (joins, heartbeats at the right,
an ahead and a behind epoch, with and without owned partitions, leaves, static leaves, commits with right and
wrong epochs, describes) for up to three members of one group, valid and invalid values interleaved; each runs
on Kafka 4.4 and on groupcoord and any difference in error codes, epochs, states or assignments fails with the
shrunk (minimal) sequence. Classic groups are not fuzzed here: their JoinGroup waits for the other members,
which a random sequence would turn into rebalance-timeout waits (tests/oracle/test_classic.py covers them).

`make test` runs GROUPCOORD_ORACLE_FUZZ_EXAMPLES (default 8) examples; `make oracle-fuzz` runs many more."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.incremental_alter_configs import (
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from tests.oracle.reqs import cg_describe, cg_heartbeat, commit
from tests.oracle.transcript import Names, Recorder, diff, run_both

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("GROUPCOORD_ORACLE_FUZZ_EXAMPLES", "8"))
PARTITIONS = 4
MEMBERS = ("m0", "m1", "m2")
# m2 is static, the others dynamic. Left out of the drawn space (open finding, report below): a live dynamic
# member rejoining at epoch 0 *with* an instance id (Kafka answered it no partitions, groupcoord its old ones;
# not always, so timing may be involved); and two server assignors tied (Kafka breaks the tie by hash-table
# order, groupcoord by name: docs/differences.md).
STATIC = {"m2": "i-m2"}

member = st.sampled_from(MEMBERS)
op = st.one_of(
    st.tuples(st.just("join"), member, st.sampled_from(["range", None])),
    st.tuples(
        st.just("hb"), member, st.sampled_from(["ok", "ahead", "behind", "zero", "null_owned", "empty_owned"])
    ),
    st.tuples(st.just("leave"), member, st.sampled_from([-1, -2])),
    st.tuples(st.just("commit"), member, st.sampled_from(["ok", "ahead", "unknown", "admin"])),
    st.tuples(st.just("describe")),
)


def _group_config(r: Recorder, c: Any, group: str) -> None:
    """consumer.assignment.interval.ms=0 for the group, so a target is computed in the heartbeat that needs it
    on both servers (the KIP-1263 interval would make each outcome depend on the wall clock)."""
    cfg = IncrementalAlterableConfig(name="consumer.assignment.interval.ms", config_operation=0, value="0")
    res = IncrementalAlterConfigsResource(resource_type=32, resource_name=group, configs=(cfg,))
    c.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(resources=(res,)))
    r.note("group config", c.recv().responses[0].error_code)


def sequence(ops: list[tuple], topic_key: str) -> Any:
    def scenario(r: Recorder, n: Names) -> None:
        r.epoch_shift = 1
        g, c = n("g"), r.conn("fuzz")
        _group_config(r, c, g)
        topic = r.target.fuzz_topic  # type: ignore[attr-defined]
        state: dict[str, tuple[int, Any]] = {}  # member -> (epoch, owned)
        for i, o in enumerate(ops):
            label = f"{i} {o}"
            kind, m = o[0], (o[1] if len(o) > 1 else "")
            epoch, owned = state.get(m, (0, ()))
            if kind == "join":
                inst = STATIC.get(m)
                resp = cg_heartbeat(
                    r, c, label, g, m, 0, topics=(topic,), rebalance=30000, assignor=o[2], instance=inst
                )
            elif kind == "hb":
                e = {"ok": epoch, "ahead": epoch + 1, "behind": epoch - 1, "zero": 0}.get(o[2], epoch)
                if o[2] == "behind" and epoch + (0 if r.is_kafka else 1) <= 2:
                    e = -3  # one behind a first epoch is Kafka's epoch 1, which groupcoord has not (named)
                have = None if o[2] == "null_owned" else (() if o[2] == "empty_owned" else owned)
                resp = cg_heartbeat(r, c, label, g, m, e, owned=have)
            elif kind == "leave":
                resp = cg_heartbeat(r, c, label, g, m, o[2], instance=STATIC.get(m))
            elif kind == "commit":
                e = {"ok": epoch, "ahead": epoch + 1, "unknown": epoch, "admin": -1}[o[2]]
                who = {"unknown": "nobody", "admin": ""}.get(o[2], m)
                commit(r, c, label, g, {(topic, 0): i + 1}, gen=e, member=who, version=9)
                continue
            else:
                cg_describe(r, c, label, g)
                continue
            if resp.error_code == 0 and resp.member_epoch > 0:
                got = tuple(resp.assignment.topic_partitions) if resp.assignment is not None else owned
                state[m] = (resp.member_epoch, got)
            elif resp.error_code != 0 or resp.member_epoch < 0:
                state.pop(m, None) if resp.member_epoch < 0 else None
        cg_describe(r, c, "final describe", g)

    return scenario


@pytest.fixture(scope="module")
def fuzz_pair(oracle_pair):  # type: ignore[no-untyped-def]
    names = Names("fuzz-topic")
    topic = names("t")
    for t in oracle_pair:
        t.create_topic(topic, PARTITIONS)
        t.fuzz_topic = topic  # type: ignore[attr-defined]
    return oracle_pair


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
@given(ops=st.lists(op, min_size=1, max_size=12))
def test_fuzz_consumer_group_same_as_kafka(fuzz_pair, ops) -> None:  # type: ignore[no-untyped-def]
    kafka_t, ours = run_both(fuzz_pair, sequence(ops, "t"), "fuzz")
    found = diff(kafka_t, ours)
    assert not found, (
        "groupcoord differs from Kafka 4.4 for\n  " + "\n  ".join(map(str, ops)) + "\n  " + "\n  ".join(found)
    )
