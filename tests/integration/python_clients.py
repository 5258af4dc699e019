"""The in-process client drivers of the shared group scenarios: aiokafka, kafka-python, confluent-kafka
(the interface: `client_api.py`).

Each blocking client lives on its own `PollingThread` (neither kafka-python's nor confluent's consumer may be
used from two threads at once); aiokafka's consumers live on one event loop running on a thread, and every
call to them is made on that loop.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import textwrap
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from tests.integration.client_api import Described, DescribedMember, Listed, Partitions, TopicPartitionKey
from tests.integration.helpers import PollingThread, kafka_python_poll

logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
logging.getLogger("kafka").setLevel(logging.CRITICAL)


def python_child(script: str, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
    return [sys.executable, "-c", script, bootstrap, topic, group, str(session_ms)]


# ============================================================================================ aiokafka


class LoopThread:
    """An asyncio loop on a daemon thread: `run(coro)` and `call(fn)` execute there and return the result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="aiokafka-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], Any], timeout: float = 20) -> Any:
        async def wrapped() -> Any:
            return fn()

        return self.run(wrapped(), timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


class AiokafkaMember:
    def __init__(self, loop: LoopThread, consumer: Any) -> None:
        self._loop = loop
        self._c = consumer
        self._closed = False

    def owned(self) -> Partitions:
        return self._loop.call(lambda: frozenset((tp.topic, tp.partition) for tp in self._c.assignment()))

    def generation(self) -> int:
        return self._loop.call(lambda: self._c._coordinator.generation)

    def member_id(self) -> str:
        return self._loop.call(lambda: self._c._coordinator.member_id)

    def error(self) -> None:
        return None

    def commit(self, offsets: dict[TopicPartitionKey, tuple[int, str]]) -> None:
        from aiokafka import TopicPartition
        from aiokafka.structs import OffsetAndMetadata

        self._loop.run(
            self._c.commit(
                {TopicPartition(t, p): OffsetAndMetadata(o, m) for (t, p), (o, m) in offsets.items()}
            )
        )

    def committed(self, tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, tuple[int, str | None]]:
        from aiokafka import TopicPartition

        # aiokafka's committed() returns the offset only
        return {(t, p): (self._loop.run(self._c.committed(TopicPartition(t, p))), None) for t, p in tps}

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._loop.run(self._c.stop())


class AiokafkaAdmin:
    """aiokafka's admin lists and describes; it has no group deletion, so kafka-python's admin deletes."""

    def __init__(self, loop: LoopThread, bootstrap: str) -> None:
        from aiokafka.admin import AIOKafkaAdminClient

        self._loop = loop
        self._admin = loop.run(self._start(AIOKafkaAdminClient, bootstrap))
        self._deleter = KafkaPythonAdmin(bootstrap)

    @staticmethod
    async def _start(cls: Any, bootstrap: str) -> Any:
        admin = cls(bootstrap_servers=bootstrap)
        await admin.start()
        return admin

    def list_groups(self) -> dict[str, Listed]:
        listed = self._loop.run(self._admin.list_consumer_groups())
        return {g[0]: Listed(protocol_type=g[1], state=None, simple=None) for g in listed}

    def describe(self, group: str) -> Described:
        g = self._loop.run(self._admin.describe_consumer_groups([group]))[0].groups[0]
        error_code, group_id, state, protocol_type, protocol, members = g[:6]
        assert group_id == group
        return Described(
            error=error_code,
            state=state,
            protocol_type=protocol_type,
            assignor=protocol,
            members=[DescribedMember(None, None, None) for _ in members],
        )

    def delete(self, *groups: str) -> dict[str, str]:
        return self._deleter.delete(*groups)

    def close(self) -> None:
        self._deleter.close()
        self._loop.run(self._admin.close())


class Aiokafka:
    name = "aiokafka"
    default_assignor = "roundrobin"
    child_script: str = textwrap.dedent(
        """
        import asyncio, sys, logging
        from aiokafka import AIOKafkaConsumer
        logging.disable(logging.CRITICAL)
        async def main():
            c = AIOKafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                                 session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=300,
                                 enable_auto_commit=False)
            await c.start()
            while not c.assignment():
                await asyncio.sleep(0.05)
            print("assigned", flush=True)
            await asyncio.sleep(3600)
        asyncio.run(main())
        """
    )

    def __init__(self) -> None:
        self._loop = LoopThread()

    def child_command(self, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
        return python_child(self.child_script, bootstrap, topic, group, session_ms)

    def create_topic(self, bootstrap: str, name: str, partitions: int) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        async def create() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                await admin.create_topics([NewTopic(name, partitions, 1)])
            finally:
                await admin.close()

        self._loop.run(create())

    def consumer(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        *,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
        instance: str | None = None,
        client_id: str | None = None,
    ) -> AiokafkaMember:
        from aiokafka import AIOKafkaConsumer

        kw: dict[str, Any] = {"group_instance_id": instance} if instance else {}
        if client_id:
            kw["client_id"] = client_id

        async def start() -> Any:
            c = AIOKafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                enable_auto_commit=False,
                **kw,
            )
            await c.start()
            return c

        return AiokafkaMember(self._loop, self._loop.run(start()))

    def admin(self, bootstrap: str) -> AiokafkaAdmin:
        return AiokafkaAdmin(self._loop, bootstrap)

    def close(self) -> None:
        self._loop.close()


# ======================================================================================== kafka-python


class KafkaPythonMember:
    def __init__(self, thread: PollingThread) -> None:
        self._t = thread

    def owned(self) -> Partitions:
        return self._t.state[0] if self._t.state else frozenset()

    def generation(self) -> int:
        return self._t.state[1] if self._t.state else -1

    def member_id(self) -> str:
        return self._t.state[2] if self._t.state else ""

    def error(self) -> BaseException | None:
        return self._t.error

    def commit(self, offsets: dict[TopicPartitionKey, tuple[int, str]]) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        tps = {TopicPartition(t, p): OffsetAndMetadata(o, m, -1) for (t, p), (o, m) in offsets.items()}
        self._t.call(lambda c: c.commit(tps))

    def committed(self, tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, tuple[int, str | None]]:
        from kafka import TopicPartition

        out: dict[TopicPartitionKey, tuple[int, str | None]] = {}
        for t, p in tps:
            tp = TopicPartition(t, p)
            offset = self._t.call(lambda c, tp=tp: c.committed(tp))
            meta = self._t.call(lambda c, tp=tp: c.committed(tp, metadata=True))
            out[(t, p)] = (offset, meta.metadata if meta is not None else None)
        return out

    def close(self) -> None:
        self._t.stop(lambda c: c.close())  # close() sends LeaveGroup (a dynamic member)


class KafkaPythonAdmin:
    def __init__(self, bootstrap: str) -> None:
        from kafka.admin import KafkaAdminClient

        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def list_groups(self) -> dict[str, Listed]:
        return {
            g["group_id"]: Listed(protocol_type=g["protocol_type"], state=g["group_state"], simple=None)
            for g in self._admin.list_groups()
        }

    def describe(self, group: str) -> Described:
        d = self._admin.describe_groups([group])[group]
        members = [
            DescribedMember(
                client_id=m["client_id"],
                partitions={
                    (a["topic"], p)
                    for a in m["member_assignment"]["assigned_partitions"]
                    for p in a["partitions"]
                },
                topics=list(m["member_metadata"]["topics"]),
            )
            for m in d["members"]
        ]
        return Described(
            error=0 if d["error"] is None else d["error"],
            state=d["group_state"],
            protocol_type=d["protocol_type"],
            assignor=d["protocol_data"],
            members=members,
        )

    def delete(self, *groups: str) -> dict[str, str]:
        from kafka.errors import GroupIdNotFoundError, NonEmptyGroupError

        known = {
            "OK": "ok",
            NonEmptyGroupError.__name__: "non_empty",
            GroupIdNotFoundError.__name__: "not_found",
        }
        return {g: known.get(r, str(r)) for g, r in self._admin.delete_groups(list(groups)).items()}

    def close(self) -> None:
        self._admin.close()


class KafkaPython:
    name = "kafka-python"
    default_assignor = "range"  # kafka-python's first default assignor
    child_script: str = textwrap.dedent(
        """
        import sys, time, logging
        from kafka import KafkaConsumer
        logging.disable(logging.CRITICAL)
        c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                          session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=300, enable_auto_commit=False)
        assert c.partitions_for_topic(sys.argv[2])  # see KafkaPython.consumer
        c.subscribe([sys.argv[2]])
        deadline = time.monotonic() + 30
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(timeout_ms=100)
        print("assigned" if c.assignment() else "unassigned", flush=True)
        while True:
            c.poll(timeout_ms=100)
        """
    )

    def child_command(self, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
        return python_child(self.child_script, bootstrap, topic, group, session_ms)

    def create_topic(self, bootstrap: str, name: str, partitions: int) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        finally:
            admin.close()

    def consumer(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        *,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
        instance: str | None = None,
        client_id: str | None = None,
    ) -> KafkaPythonMember:
        from kafka import KafkaConsumer

        kw: dict[str, Any] = {"group_instance_id": instance} if instance else {}
        if client_id:
            kw["client_id"] = client_id

        def make() -> Any:
            c = KafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=group,
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                enable_auto_commit=False,
                **kw,
            )
            # kafka-python 3.0.12 joins before it has metadata for its subscription; a leader that then
            # rejoins for the metadata change and has its poll() time out mid-join never applies the
            # SyncGroup answer (need_rejoin() turns False while the join task is still in flight): no
            # heartbeats, no rejoin, the member just expires. Fetching the topic's metadata before
            # subscribing avoids that client bug.
            assert c.partitions_for_topic(topic)
            c.subscribe([topic])
            return c

        def snapshot(c: Any) -> tuple[Partitions, int, str]:
            g = c._coordinator._generation
            return frozenset((tp.topic, tp.partition) for tp in c.assignment()), g.generation_id, g.member_id

        # kafka-python 3.0.12 wedges a member whose poll() times out while its JoinGroup/SyncGroup round trip
        # is in flight and whose need_rejoin() has meanwhile turned False (seen for leaders): the SyncGroup
        # answer is never applied, heartbeats stay disabled and the member silently expires. Long polls make
        # that window rare.
        t = PollingThread(make, lambda c: kafka_python_poll(c, 1000), snapshot, name=f"kp-{group}")
        t.wait_ready()
        return KafkaPythonMember(t)

    def admin(self, bootstrap: str) -> KafkaPythonAdmin:
        return KafkaPythonAdmin(bootstrap)

    def close(self) -> None:
        return None


# ====================================================================================== confluent-kafka


class ConfluentMember:
    """librdkafka does not expose the generation or the member id: the scenarios use the server's view."""

    def __init__(self, thread: PollingThread) -> None:
        self._t = thread

    def owned(self) -> Partitions:
        return self._t.state or frozenset()

    def generation(self) -> None:
        return None

    def member_id(self) -> None:
        return None

    def error(self) -> BaseException | None:
        return self._t.error

    def commit(self, offsets: dict[TopicPartitionKey, tuple[int, str]]) -> None:
        from confluent_kafka import TopicPartition

        tps = [
            TopicPartition(t, p, o, metadata=m) if m else TopicPartition(t, p, o)
            for (t, p), (o, m) in offsets.items()
        ]
        self._t.call(lambda c: c.commit(offsets=tps, asynchronous=False))

    def committed(self, tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, tuple[int, str | None]]:
        from confluent_kafka import TopicPartition

        got = self._t.call(lambda c: c.committed([TopicPartition(t, p) for t, p in tps], timeout=60))
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in got}

    def close(self) -> None:
        self._t.stop(lambda c: c.close())


class ConfluentAdmin:
    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        # keep the reference: a collected AdminClient fails its futures
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

    @staticmethod
    def _state(state: Any) -> str:
        from confluent_kafka import ConsumerGroupState as S

        names = {
            S.STABLE: "Stable",
            S.EMPTY: "Empty",
            S.DEAD: "Dead",
            S.PREPARING_REBALANCING: "PreparingRebalance",
            S.COMPLETING_REBALANCING: "CompletingRebalance",
        }
        return names.get(state, str(state))

    def list_groups(self) -> dict[str, Listed]:
        valid = self._admin.list_consumer_groups(request_timeout=10).result(15).valid
        return {
            g.group_id: Listed(
                protocol_type=None, state=self._state(g.state), simple=g.is_simple_consumer_group
            )
            for g in valid
        }

    def describe(self, group: str) -> Described:
        d = self._admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        return Described(
            error=0,
            state=self._state(d.state),
            protocol_type=None,
            assignor=d.partition_assignor,
            members=[
                DescribedMember(
                    client_id=m.client_id,
                    partitions={(tp.topic, tp.partition) for tp in m.assignment.topic_partitions},
                    topics=None,
                )
                for m in d.members
            ],
        )

    def delete(self, *groups: str) -> dict[str, str]:
        from confluent_kafka import KafkaError, KafkaException

        known = {
            KafkaError.NO_ERROR: "ok",
            KafkaError.NON_EMPTY_GROUP: "non_empty",
            KafkaError.GROUP_ID_NOT_FOUND: "not_found",
        }
        out = {}
        for g, f in self._admin.delete_consumer_groups(list(groups), request_timeout=10).items():
            try:
                f.result(15)
                code = KafkaError.NO_ERROR
            except KafkaException as exc:
                code = exc.args[0].code()
            out[g] = known.get(code, str(code))
        return out

    def close(self) -> None:
        return None


class Confluent:
    name = "confluent-kafka"
    default_assignor = "range"  # librdkafka's first default assignor
    child_script: str = textwrap.dedent(
        """
        import sys, time
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[3], "log_level": 0,
                      "session.timeout.ms": int(sys.argv[4]), "heartbeat.interval.ms": 300,
                      "enable.auto.commit": False})
        c.subscribe([sys.argv[2]])
        deadline = time.monotonic() + 30
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.1)
        print("assigned" if c.assignment() else "unassigned", flush=True)
        while True:
            c.poll(0.1)
        """
    )

    def child_command(self, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
        return python_child(self.child_script, bootstrap, topic, group, session_ms)

    def create_topic(self, bootstrap: str, name: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            f.result(15)

    def consumer(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        *,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
        instance: str | None = None,
        client_id: str | None = None,
    ) -> ConfluentMember:
        from confluent_kafka import Consumer

        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "enable.auto.commit": False,
            "log_level": 0,
        }
        if instance:
            config["group.instance.id"] = instance
        if client_id:
            config["client.id"] = client_id

        def make() -> Any:
            c = Consumer(config)
            c.subscribe([topic])
            return c

        def snapshot(c: Any) -> Partitions:
            return frozenset((tp.topic, tp.partition) for tp in c.assignment())

        # a confluent Consumer may not be used from two threads at once (assignment() blocks while another
        # thread polls), so it lives on its own PollingThread
        t = PollingThread(make, lambda c: c.poll(0.1), snapshot, name=f"ck-{group}")
        t.wait_ready()
        return ConfluentMember(t)

    def admin(self, bootstrap: str) -> ConfluentAdmin:
        return ConfluentAdmin(bootstrap)

    def close(self) -> None:
        return None
