"""Security (issue 18): TLS on SSL/SASL_SSL listeners, SASL PLAIN and SCRAM on SASL_* listeners, the
durable credential store. `Security` is the one entry the broker wires: it builds each listener's TLS
context, and on every new connection sets its principal (a client certificate's subject, or ANONYMOUS) and
hands it a SASL gate when its listener needs one.
"""

from __future__ import annotations

import secrets
import ssl
from pathlib import Path
from typing import Protocol

import structlog

from groupcoord.server.config import ServerConfig
from groupcoord.server.net.listeners import Listener
from groupcoord.server.security.authorizer import AclBinding, AclFilter, Authorizer, binding_problem
from groupcoord.server.security.cluster_store import ClusterSecurityStore, merge_node_file
from groupcoord.server.security.gate import SaslGate
from groupcoord.server.security.inter_broker import InterBrokerClient
from groupcoord.server.security.inter_broker import check_problems as check_inter_broker
from groupcoord.server.security.plain import users_from_jaas
from groupcoord.server.security.scram import MECHANISMS as SCRAM_MECHANISMS
from groupcoord.server.security.scram import ScramCredential, credential_from_salted, new_credential
from groupcoord.server.security.store import AclAndCredentialStore, SecurityStore
from groupcoord.server.security.tls import TlsSettings, principal_from_peercert, server_context

log = structlog.get_logger("groupcoord.security")

ANONYMOUS = "User:ANONYMOUS"
AUTHORIZERS = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SecuredPeer(Protocol):
    listener: Listener
    principal: str

    def peer_certificate(self) -> dict | None: ...  # type: ignore[type-arg]


def _secret(text: str | None, path: str | None, flag: str) -> str:
    """A secret setting given inline (flag or GROUPCOORD_* variable) or as `--<flag>-file`, so that it need
    not appear in the process list. Raises ValueError naming the flag when the file cannot be read."""
    if not path:
        return text or ""
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{flag}-file: cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def jaas_config(cfg: ServerConfig) -> str:
    return _secret(cfg.sasl_jaas_config, cfg.sasl_jaas_config_file, "--sasl-jaas-config")


def add_scram_text(cfg: ServerConfig) -> str:
    return _secret(cfg.add_scram, cfg.add_scram_file, "--add-scram")


def parse_add_scram(text: str) -> list[tuple[str, str, str, int]]:
    """kafka-storage's `--add-scram` syntax: `SCRAM-SHA-256=[name=alice,password=alice-secret]`, several
    separated by `;` (or new lines, in a file); `iterations=8192` optional. -> (mechanism, user, password,
    iterations)."""
    out = []
    for raw in (p.strip() for p in text.replace("\n", ";").split(";")):
        if not raw:
            continue
        mech, sep, rest = raw.partition("=")
        if not sep or mech not in SCRAM_MECHANISMS or not (rest.startswith("[") and rest.endswith("]")):
            raise ValueError(f"--add-scram: {raw!r} is not SCRAM-SHA-256=[name=...,password=...]")
        fields = dict(kv.partition("=")[::2] for kv in rest[1:-1].split(","))
        if not fields.get("name") or not fields.get("password"):
            raise ValueError(f"--add-scram: {raw!r} needs name= and password=")
        out.append((mech, fields["name"], fields["password"], int(fields.get("iterations", 4096))))
    return out


class Security:
    def __init__(self, cfg: ServerConfig) -> None:
        self.config = cfg
        memory = cfg.storage == "memory"
        #: ACLs and SCRAM credentials: the cluster's in PostgreSQL under `--cluster`, else security.json
        self.store: AclAndCredentialStore = (
            ClusterSecurityStore(cfg.cluster)
            if cfg.cluster
            else SecurityStore(None if memory else cfg.data_dir / "security.json")
        )
        self.mechanisms = tuple(m.strip() for m in cfg.sasl_enabled_mechanisms.split(",") if m.strip())
        self.plain_users = users_from_jaas(jaas_config(cfg))
        #: keys the stand-in SCRAM salt of unknown users (server.security.scram); per process
        self._fake_salt_key = secrets.token_bytes(32)
        self._contexts: dict[str, ssl.SSLContext] = {}
        #: Kafka's StandardAuthorizer when `--authorizer-class-name` names one; None: everything allowed
        self.authorizer: Authorizer | None = None
        if cfg.authorizer_class_name:
            supers = frozenset(p.strip() for p in (cfg.super_users or "").split(";") if p.strip())
            self.authorizer = Authorizer(supers, cfg.allow_everyone_if_no_acl_found)

    async def open(self) -> None:
        """Read the stored credentials and ACLs (and follow their changes), add `--add-scram` users
        (durably)."""
        self.store.on_change = self._adopt_acls
        await self.store.open()
        if isinstance(self.store, ClusterSecurityStore) and self.config.storage != "memory":
            await merge_node_file(self.store, self.config.data_dir / "security.json")
        added = add_scram_text(self.config)
        if added:
            await self.store.alter_scram(
                [],
                [
                    (user, mech, new_credential(mech, password, iterations))
                    for mech, user, password, iterations in parse_add_scram(added)
                ],
            )

    async def close(self) -> None:
        await self.store.close()

    def _adopt_acls(self) -> None:
        """The store's view changed (a write here, or at another node of the cluster)."""
        if self.authorizer is not None:
            self.authorizer.bindings = list(self.store.acls)

    def ssl_context(self, listener: Listener) -> ssl.SSLContext | None:
        if not listener.is_ssl:
            return None
        if listener.name not in self._contexts:
            cfg = self.config
            settings = TlsSettings(
                cfg.ssl_keystore_location or "",
                cfg.ssl_key_password,
                cfg.ssl_truststore_location,
                # as Kafka: the broker-wide ssl.client.auth applies to SSL listeners, not to SASL_SSL ones
                cfg.ssl_client_auth if listener.protocol == "SSL" else "none",
            )
            self._contexts[listener.name] = server_context(settings)
        return self._contexts[listener.name]

    def inter_broker(self, listeners: tuple[Listener, ...]) -> InterBrokerClient:
        """How this node reaches the others (cluster mode): the listener it registers, TLS and SASL login."""
        return InterBrokerClient.from_config(self.config, listeners, jaas_config(self.config))

    # -- access control (server.services.AccessControl)

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(principal, host, operation, resource_type, name)

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_by_resource_type(principal, host, operation, resource_type)

    def operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        assert self.authorizer is not None
        return self.authorizer.operations(principal, host, resource_type, name)

    def is_super_user(self, principal: str) -> bool:
        return self.authorizer is None or principal in self.authorizer.super_users

    async def create_acls(self, bindings: list[AclBinding]) -> list[str | None]:
        """Add the valid bindings (durably, before the answer); per binding None or why it was refused.
        Raises SecurityStoreError when they could not be stored."""
        assert self.authorizer is not None
        results = [binding_problem(b) for b in bindings]
        await self.store.add_acls([b for b, p in zip(bindings, results, strict=True) if p is None])
        return results

    def describe_acls(self, flt: AclFilter) -> list[AclBinding]:
        assert self.authorizer is not None
        return [b for b in self.authorizer.bindings if flt.matches(b)]

    async def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Per filter the bindings it matched and that are now deleted (durably, before the answer)."""
        assert self.authorizer is not None
        return await self.store.delete_acls(filters)

    def scram_users(self) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations (DescribeUserScramCredentials shows no more than that)."""
        return {u: {m: c.iterations for m, c in mechs.items()} for u, mechs in self.store.scram.items()}

    async def alter_scram(
        self, deletions: list[tuple[str, str]], upsertions: list[tuple[str, str, int, bytes, bytes]]
    ) -> None:
        """Apply checked changes and store them before the answer (persist, then reply). Only the salted
        credential is kept (Kafka's ScramCredential), never a password."""
        await self.store.alter_scram(
            deletions,
            [
                (user, mech, credential_from_salted(mech, salted, salt, iterations))
                for user, mech, iterations, salt, salted in upsertions
            ],
        )

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.store.scram.get(user, {}).get(mechanism)

    def connection_made(self, conn: SecuredPeer) -> SaslGate | None:
        """Principal from the client certificate (SSL listeners); a SASL gate on SASL listeners."""
        conn.principal = ANONYMOUS
        if conn.listener.protocol == "SSL":
            principal = principal_from_peercert(conn.peer_certificate())
            if principal is not None:
                conn.principal = principal
                log.info("TLS client certificate accepted", principal=principal, listener=conn.listener.name)
        if conn.listener.is_sasl:
            cfg = self.config
            return SaslGate(
                self.mechanisms,
                self.plain_users,
                self.scram_credential,
                max_receive_size=cfg.sasl_server_max_receive_size,
                failure_delay_ms=cfg.connection_failed_authentication_delay_ms,
                fake_salt_key=self._fake_salt_key,
            )
        return None


def check_settings(cfg: ServerConfig, listeners: tuple[Listener, ...]) -> list[str]:
    """What stops the server at start (Kafka's ConfigException), as messages."""
    problems = []
    mechanisms = [m.strip() for m in cfg.sasl_enabled_mechanisms.split(",") if m.strip()]
    for m in mechanisms:
        if m not in SUPPORTED_MECHANISMS:
            problems.append(
                f"--sasl-enabled-mechanisms: {m} is not supported (only {', '.join(SUPPORTED_MECHANISMS)})"
            )
    if any(listener.is_ssl for listener in listeners):
        if not cfg.ssl_keystore_location:
            problems.append(
                "an SSL or SASL_SSL listener needs --ssl-keystore-location (PEM key and certificate)"
            )
        elif not Path(cfg.ssl_keystore_location).is_file():
            problems.append(f"--ssl-keystore-location: no file {cfg.ssl_keystore_location}")
    if cfg.ssl_keystore_type.upper() != "PEM" or cfg.ssl_truststore_type.upper() != "PEM":
        problems.append("--ssl-keystore-type and --ssl-truststore-type: only PEM is supported")
    if cfg.ssl_client_auth not in ("required", "requested", "none"):
        problems.append("--ssl-client-auth must be required, requested or none")
    if cfg.ssl_client_auth != "none" and not cfg.ssl_truststore_location and any(x.is_ssl for x in listeners):
        problems.append(
            "--ssl-client-auth required/requested needs --ssl-truststore-location (PEM CA certificates)"
        )
    if any(listener.is_sasl for listener in listeners) and not mechanisms:
        problems.append("a SASL listener needs --sasl-enabled-mechanisms")
    if cfg.authorizer_class_name and cfg.authorizer_class_name not in AUTHORIZERS:
        problems.append(
            f"--authorizer-class-name: {cfg.authorizer_class_name} is not one of {', '.join(AUTHORIZERS)}"
        )
    for flag, inline, path in (
        ("--sasl-jaas-config", cfg.sasl_jaas_config, cfg.sasl_jaas_config_file),
        ("--add-scram", cfg.add_scram, cfg.add_scram_file),
    ):
        if inline and path:
            problems.append(f"give {flag} or {flag}-file, not both")
    try:
        problems.extend(check_inter_broker(cfg, listeners, jaas_config(cfg)))
    except ValueError as exc:
        problems.append(str(exc))
    try:
        parse_add_scram(add_scram_text(cfg))
    except ValueError as exc:
        problems.append(str(exc))
    return problems
