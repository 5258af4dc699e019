"""The out-of-process client drivers of the shared group scenarios: the Java client and kafkajs, each one
driver process per test (`tests/drivers/java/ScenarioDriver.java`, `tests/drivers/kafkajs/scenario.js`)
driven command by command (the interface: `client_api.py`).
"""

from __future__ import annotations

import itertools
from typing import Any

from tests.integration import drivers
from tests.integration.client_api import Described, DescribedMember, Listed, Partitions, TopicPartitionKey

# ================================================================================== Java and kafkajs


class CommandMember:
    """A consumer inside a command-driven driver process (Java or node), addressed by its key."""

    def __init__(self, driver: drivers.Driver, key: str) -> None:
        self._d = driver
        self._key = key
        self._closed = False

    def _state(self) -> dict[str, Any]:
        return self._d.request(f"state {self._key}")

    def owned(self) -> Partitions:
        return frozenset((t, p) for t, p in self._state()["partitions"])

    def generation(self) -> int | None:
        return self._state()["generation"]  # kafkajs: None (it exposes no generation)

    def member_id(self) -> str | None:
        return self._state()["member_id"]

    def error(self) -> BaseException | None:
        err = self._state()["error"]
        return None if err is None else RuntimeError(f"{err['error']}: {err['message']}")

    def commit(self, offsets: dict[TopicPartitionKey, tuple[int, str]]) -> None:
        args = " ".join(f"{t} {p} {o} {m or '-'}" for (t, p), (o, m) in offsets.items())
        self._d.request(f"commit {self._key} {args}")

    def committed(self, tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, tuple[int, str | None]]:
        got = self._d.request(f"committed {self._key} " + " ".join(f"{t} {p}" for t, p in tps))
        out: dict[TopicPartitionKey, tuple[int, str | None]] = {}
        for key, value in got.items():
            t, _, p = key.rpartition(":")
            out[(t, int(p))] = (value[0], value[1]) if value is not None else (-1, None)
        return out

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._d.request(f"close {self._key}")


class CommandAdmin:
    """The driver process's admin client (Java AdminClient, kafkajs admin); fields it lacks come back None."""

    def __init__(self, driver: drivers.Driver) -> None:
        self._d = driver

    def list_groups(self) -> dict[str, Listed]:
        return {
            g["group_id"]: Listed(
                protocol_type=g.get("protocol_type"), state=g.get("state"), simple=g.get("simple")
            )
            for g in self._d.request("list")
        }

    def describe(self, group: str) -> Described:
        d = self._d.request(f"describe {group}")
        return Described(
            error=d.get("error", 0),
            state=d["state"],
            protocol_type=d.get("protocol_type"),
            assignor=d["assignor"] if "assignor" in d else d["protocol"],
            members=[
                DescribedMember(m["client_id"], {(t, p) for t, p in m["partitions"]}, m.get("topics"))
                for m in d["members"]
            ],
        )

    def delete(self, *groups: str) -> dict[str, str]:
        return self._d.request("delete " + " ".join(groups))

    def close(self) -> None:
        return None


class CommandClient:
    """A client in one driver process per test, driven command by command (see ScenarioDriver.java)."""

    name: str
    default_assignor: str

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self._command = command
        self._env = env
        self._d = drivers.Driver(command, env=env)
        self._keys = itertools.count(1)
        self._bootstrap: str | None = None

    def _driver(self, bootstrap: str) -> drivers.Driver:
        if self._bootstrap is None:
            self._bootstrap = bootstrap
            self._d.request(f"bootstrap {bootstrap}")
        assert self._bootstrap == bootstrap
        return self._d

    def child_command(self, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
        return [*self._command, "child", bootstrap, topic, group, str(session_ms)]

    def create_topic(self, bootstrap: str, name: str, partitions: int) -> None:
        self._driver(bootstrap).request(f"topic {name} {partitions}")

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
    ) -> CommandMember:
        key = f"m{next(self._keys)}"
        self._driver(bootstrap).request(
            f"consumer {key} {topic} {group} {session_timeout_ms} {heartbeat_interval_ms} "
            f"{instance or '-'} {client_id or '-'}"
        )
        return CommandMember(self._d, key)

    def admin(self, bootstrap: str) -> CommandAdmin:
        return CommandAdmin(self._driver(bootstrap))

    def close(self) -> None:
        try:
            if self._d.proc.poll() is None and self._d.proc.stdin is not None:
                self._d.proc.stdin.write("quit\n")
                self._d.proc.stdin.flush()
                self._d.finish(60)
        finally:
            self._d.kill()


class JavaClient(CommandClient):
    """kafka-clients 4.3 (classic group protocol): tests/drivers/java/ScenarioDriver.java in one JVM."""

    name = "java"
    default_assignor = "range"  # the Java consumer's first default assignor

    def __init__(self) -> None:
        cp = drivers.java_classpath()
        super().__init__(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "ScenarioDriver"])


class KafkajsClient(CommandClient):
    """kafkajs 2.2.4: tests/drivers/kafkajs/scenario.js in one node process. No static membership."""

    name = "kafkajs"
    default_assignor = "RoundRobinAssigner"

    def __init__(self) -> None:
        env = {"NODE_PATH": drivers.kafkajs_node_path(), "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
        super().__init__(["node", str(drivers.DRIVERS / "kafkajs" / "scenario.js")], env=env)

    def child_command(self, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
        # the child is started without the driver's environment: name kafkajs' folder on its command line
        env = [f"{k}={v}" for k, v in (self._env or {}).items()]
        return ["env", *env, *super().child_command(bootstrap, topic, group, session_ms)]
