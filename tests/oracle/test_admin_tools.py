"""Kafka 4.4's own admin tools, run from its jars against Kafka 4.4 and groupcoord in the same scenario, their
outputs compared after normalising what differs by nature (bootstrap address, node and topic ids, the
subscription's and topic's unique names, the metadata log's offsets and timestamps):

- `kafka-client-metrics` (ClientMetricsCommand) --alter/--describe/--list/--delete, and `kafka-configs
  --entity-type client-metrics` (ConfigCommand) --describe --all/--alter --add-config/--delete-config, with
  Kafka's refusals (an interval out of range, an unknown match selector) printed alike;
- `kafka-metadata-quorum describe --status` and `--replication` (MetadataQuorumCommand);
- `kafka-topics --describe` (TopicCommand) on one topic, Elr and LastKnownElr printed as empty lists.

What is left different is named in docs/differences.md and normalised here by name only: the voter's
endpoint (Kafka's CONTROLLER listener; groupcoord has none and shows the client listener) and Kafka's
cluster-level `min.insync.replicas=1` that `kafka-topics` lists in every topic's Configs.

One JVM per tool call (~1-2 CPU-seconds each), so each test batches a whole scenario per target.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.oracle import kafka
from tests.oracle.targets import Target

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
#: log lines of the tools' own start-up, not their output
_NOISE = re.compile(r"^(SLF4J: .*|\s+at .*|\s*\.\.\. \d+ more)$")


def tool(target: Target, main: str, *args: str) -> str:
    """`main --bootstrap-server <target> args...`: its exit code and output (stdout, then stderr), noise
    dropped, the target's address written HOST:PORT."""
    cmd = [
        "java",
        *kafka.JVM_OPTS,
        "-cp",
        f"{kafka.JARS}/*",
        main,
        "--bootstrap-server",
        target.bootstrap,
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if not _NOISE.match(ln)]
    text = "\n".join(lines).replace(target.bootstrap, "HOST:PORT")
    return f"$ {main.rpartition('.')[2]} {' '.join(args)}\nrc={done.returncode}\n{text}\n"


def both(pair: tuple[Target, Target], scenario) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    kafka_target, groupcoord_target = pair
    return scenario(kafka_target), scenario(groupcoord_target)


def test_client_metrics_and_configs_tools_print_as_against_kafka(oracle_pair: tuple[Target, Target]) -> None:
    def scenario(t: Target) -> str:
        name = t.unique("cm")
        out = [
            tool(t, CLIENT_METRICS, "--alter", "--name", name, "--metrics", "org.apache.kafka.producer.,"
                 "org.apache.kafka.consumer.", "--interval", "1000", "--match", "client_id=abc.*"),
            tool(t, CLIENT_METRICS, "--describe", "--name", name),
            tool(t, CONFIGS, "--describe", "--entity-type", "client-metrics", "--entity-name", name, "--all"),
            tool(t, CONFIGS, "--alter", "--entity-type", "client-metrics", "--entity-name", name,
                 "--add-config", "interval.ms=10"),
            tool(t, CONFIGS, "--alter", "--entity-type", "client-metrics", "--entity-name", name,
                 "--delete-config", "interval.ms"),
            tool(t, CONFIGS, "--describe", "--entity-type", "client-metrics", "--entity-name", name),
            tool(t, CLIENT_METRICS, "--alter", "--name", name, "--match", "foo=bar"),
        ]  # fmt: skip
        listed = tool(t, CLIENT_METRICS, "--list")
        out.append("listed\n" if f"\n{name}\n" in listed else listed)
        out.append(tool(t, CLIENT_METRICS, "--delete", "--name", name))
        out.append(tool(t, CLIENT_METRICS, "--describe", "--name", name))
        return "".join(out).replace(name, "NAME")

    ours_kafka, ours = both(oracle_pair, scenario)
    assert ours == ours_kafka
    # the scenario did what it says: the refusals were refusals, the subscription was there, then gone
    assert "interval must be between 100 and 3600000" in ours and "Illegal client matching pattern" in ours
    assert "metrics=org.apache.kafka.producer.,org.apache.kafka.consumer." in ours and "listed\n" in ours
    assert "doesn't exist and doesn't have dynamic config" in ours


def _quorum_normalised(text: str) -> str:
    text = re.sub(r"(ClusterId:\s+)\S+", r"\1CLUSTER", text)
    text = re.sub(r"(HighWatermark:\s+)\d+", r"\1N", text)
    text = re.sub(r'"directoryId": "[^"]+"', '"directoryId": "DIR"', text)
    text = re.sub(
        r'"endpoints": \["[^"]+"\]', '"endpoints": ["ENDPOINT"]', text
    )  # differences.md: no CONTROLLER
    text = re.sub(r'"id": \d+', '"id": NODE', text)
    text = re.sub(r"(LeaderId:\s+)\d+", r"\1NODE", text)
    # --replication's row: node id, directory id, log end offset, lag 0, the timestamps (columns padded to
    # the widest value, so the padding goes too)
    text = re.sub(r"(?m)^\d+\s+\S+\s+\d+\s+0\s+\d+\s+\d+\s+", "NODE DIR N 0 T T ", text)
    return re.sub(r"[ \t]+", " ", text)


def _topics_normalised(text: str) -> str:
    text = re.sub(r"TopicId: \S+", "TopicId: ID", text)
    text = re.sub(r"(Leader|Replicas|Isr): \d+", r"\1: NODE", text)
    return text.replace("Configs: min.insync.replicas=1", "Configs: ")  # differences.md: the cluster default


def test_metadata_quorum_and_topics_describe_print_as_against_kafka(
    oracle_pair: tuple[Target, Target],
) -> None:
    def scenario(t: Target) -> str:
        topic = t.unique("described")
        t.create_topic(topic, 2)
        out = [
            _quorum_normalised(tool(t, QUORUM, "describe", "--status")),
            _quorum_normalised(tool(t, QUORUM, "describe", "--replication")),
            _topics_normalised(tool(t, TOPICS, "--describe", "--topic", topic)),
        ]
        return "".join(out).replace(topic, "TOPIC")

    ours_kafka, ours = both(oracle_pair, scenario)
    assert ours == ours_kafka
    assert "CurrentVoters:" in ours and "NODE DIR N 0 T T Leader" in ours
    assert "Partition: 1\tLeader: NODE\tReplicas: NODE\tIsr: NODE\tElr: \tLastKnownElr: " in ours
