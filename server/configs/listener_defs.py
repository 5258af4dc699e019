"""The listener configs DescribeConfigs lists for the BROKER resource, as Kafka 4.3 defines them
(`SocketServerConfigs`, `ReplicationConfigs`): admin tools and UIs (kafka-configs.sh, Kafka UI, AKHQ) read
the broker's addresses from them. Their values come from `ServerConfig` properties that spell the
`--host/--port` shorthand as the one PLAINTEXT listener it is. `control.plane.listener.name` is not here:
Kafka 4 removed it (it was ZooKeeper-mode only).
"""

from __future__ import annotations

from groupcoord.server.configs.types import ConfigDef, ConfigType

#: Kafka's default: every SecurityProtocol mapped to itself, in the order Java's HashMap iterates them
LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT = (
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)

LISTENER_DEFS = (
    ConfigDef(
        "listeners",
        ConfigType.LIST,
        "PLAINTEXT://:9092",
        "Listener List - Comma-separated list of URIs we will listen on and the listener names. If the listener "
        "name is not a security protocol, <code>listener.security.protocol.map</code> must also be set.",
        attr="kafka_listeners",
    ),
    ConfigDef(
        "advertised.listeners",
        ConfigType.LIST,
        None,
        "Specifies the listener addresses that the Kafka brokers will advertise to clients and other brokers. "
        "If this is not set, the value for <code>listeners</code> will be used.",
        attr="kafka_advertised_listeners",
    ),
    ConfigDef(
        "listener.security.protocol.map",
        ConfigType.STRING,
        LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT,
        "Map between listener names and security protocols.",
        attr="listener_security_protocol_map",
    ),
    ConfigDef(
        "inter.broker.listener.name",
        ConfigType.STRING,
        None,
        "Name of listener used for communication between brokers. If this is unset, the listener name is "
        "defined by security.inter.broker.protocol.",
        attr="inter_broker_listener_name",
    ),
)
