"""Durable security state: SCRAM credentials and ACL bindings, behind one interface (`AclAndCredentialStore`)
that `Security` uses without knowing where they live.

On a single node (`SecurityStore`): one small JSON file, `<data-dir>/security.json`, owned by this room rather
than the group StateStore: it changes rarely, must be readable before any group state loads (a client
authenticates before it can ask for anything), and holds nothing of the group log. Every change is written
to a temporary file, fsynced and renamed over the old one (then the folder is fsynced), so a crash leaves the
old or the new file, never half of one; the change is acknowledged only after that (persist, then reply).
With `--storage memory` nothing is written.

The file holds salted SCRAM credentials, so it is only ever the owner's: the temporary file is created with
mode 0600 (`os.open` with that mode, never a umask-dependent `open`), so no moment exists in which another
user could read it, and a `security.json` an older version left readable is narrowed to 0600 when loaded.

In cluster mode the same interface is served from PostgreSQL (`server.security.cluster_store`): ACLs and
credentials are the cluster's, as Kafka keeps them in its metadata log.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import structlog

from groupcoord.server.security.authorizer import AclBinding, AclFilter
from groupcoord.server.security.scram import ScramCredential

log = structlog.get_logger("groupcoord.security")
MODE = 0o600

#: (user, mechanism) to delete; (user, mechanism, credential) to set
Deletion = tuple[str, str]
Upsertion = tuple[str, str, ScramCredential]


class SecurityStoreError(Exception):
    """A change could not be made durable (the request is answered with an error, nothing is applied)."""


class AclAndCredentialStore(Protocol):
    """What `Security` needs of a store. `acls` and `scram` are the current view (read on every request);
    the writes return once durable; `on_change` is called whenever the view changed (also by other nodes)."""

    acls: list[AclBinding]
    scram: dict[str, dict[str, ScramCredential]]
    on_change: Callable[[], None] | None

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def add_acls(self, bindings: list[AclBinding]) -> None: ...

    async def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]: ...

    async def alter_scram(self, deletions: list[Deletion], upsertions: list[Upsertion]) -> None: ...


def matched(filters: list[AclFilter], acls: list[AclBinding]) -> list[list[AclBinding]]:
    """Per filter, the bindings it matches (DeleteAcls answers each filter with its own)."""
    return [[b for b in acls if f.matches(b)] for f in filters]


class SecurityStore:
    """Single node: `<data-dir>/security.json` (or nothing, with `--storage memory`)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.scram: dict[str, dict[str, ScramCredential]] = {}
        self.acls: list[AclBinding] = []
        self.extra: dict[str, Any] = {}  # sections this version does not know, kept as they are
        self.on_change: Callable[[], None] | None = None

    async def open(self) -> None:
        self.load()
        self._changed()

    async def close(self) -> None:
        return None

    def load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        mode = stat.S_IMODE(self.path.stat().st_mode)
        if mode & 0o077:
            os.chmod(self.path, MODE)
            log.warning("security.json was readable by others; narrowed to 0600", path=str(self.path))
        data = json.loads(self.path.read_text())
        self.scram = {
            user: {mech: ScramCredential.from_json(c) for mech, c in mechs.items()}
            for user, mechs in data.get("scram", {}).items()
        }
        self.acls = [AclBinding.from_json(row) for row in data.get("acls", [])]
        self.extra = {k: v for k, v in data.items() if k not in ("scram", "acls")}

    def save(self) -> None:
        if self.path is None:
            return
        data = dict(self.extra)
        data["acls"] = [b.to_json() for b in self.acls]
        data["scram"] = {
            user: {mech: c.to_json() for mech, c in mechs.items()} for user, mechs in self.scram.items()
        }
        tmp = self.path.with_suffix(".json.tmp")
        tmp.unlink(missing_ok=True)  # a leftover of a crash may have another mode; O_EXCL makes a fresh one
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, MODE)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    async def add_acls(self, bindings: list[AclBinding]) -> None:
        for b in bindings:
            if b not in self.acls:
                self.acls.append(b)
        self.save()
        self._changed()

    async def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        out = matched(filters, self.acls)
        gone = {b for m in out for b in m}
        if gone:
            self.acls = [b for b in self.acls if b not in gone]
            self.save()
            self._changed()
        return out

    async def alter_scram(self, deletions: list[Deletion], upsertions: list[Upsertion]) -> None:
        for user, mech in deletions:
            mechs = self.scram.get(user)
            if mechs and mech in mechs:
                del mechs[mech]
                if not mechs:
                    del self.scram[user]
        for user, mech, cred in upsertions:
            self.scram.setdefault(user, {})[mech] = cred
        if deletions or upsertions:
            self.save()
            self._changed()
