"""CLIENT_METRICS config resources (type 16, KIP-714 subscriptions) of DescribeConfigs (32), AlterConfigs (33)
and IncrementalAlterConfigs (44): Kafka's `ConfigHelper` (describe) and `ControllerConfigurationValidator`
(alter) for client metrics (server/configs/client_metrics_defs.py). ListConfigResources (74) lists them.

Describe: an empty name is INVALID_REQUEST "Client metrics subscription name must not be empty"; any other
name answers its three configs, defaults for what it does not set (a name never set answers all defaults, as
Kafka does; `kafka-configs` asks ListConfigResources first to say "doesn't exist"). Alter: as
`ClientMetricsConfigs.validate`, repeated list items dropped first (as Kafka 4.4 stores them). A change answers NONE once it is durable (`configs.json`; in cluster mode
PostgreSQL, read and written in one transaction). Removing every config removes the subscription.

Uses of the server (`ctx.services`): `ctx.services.configs` (the ConfigManager).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.configs.client_metrics_defs import (
    check_client_metrics_configs,
    client_metrics_entries,
    dedup_lists,
)
from groupcoord.server.configs.manager import ConfigManager, Refusal
from groupcoord.server.configs.resolve import ConfigEntry

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

OK: Refusal = (ErrorCode.NONE, "")


def describe_client_metrics(ctx: RequestContext, name: str) -> tuple[Refusal | None, list[ConfigEntry]]:
    if not name:
        return (ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty"), []
    configs: ConfigManager = ctx.services.configs
    return None, client_metrics_entries(configs.client_metrics_overrides(name))


async def alter_client_metrics(ctx: RequestContext, name: str, change: Any, validate_only: bool) -> Refusal:
    configs: ConfigManager = ctx.services.configs
    outcome: Refusal = OK

    def decide(current: dict[str, str]) -> dict[str, str] | None:
        """The change applied to the subscription's current configs (the cluster's in cluster mode)."""
        nonlocal outcome
        outcome = OK  # called again when the cluster's row changed under it
        wanted = change(current)
        if isinstance(wanted, tuple):
            outcome = wanted
            return None
        wanted = dedup_lists(wanted)
        problem = check_client_metrics_configs(name, wanted)
        if problem is not None:
            outcome = problem
            return None
        return None if validate_only else dict(wanted)

    try:
        await configs.update_client_metrics(name, decide)
    except OSError as exc:
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"could not write the configs: {exc.strerror}"
    return outcome
