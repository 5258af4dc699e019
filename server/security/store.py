"""Durable security state: SCRAM credentials (and, with the authorizer, ACL bindings).

One small JSON file, `<data-dir>/security.json`, owned by this room rather than the group StateStore: it
changes rarely, must be readable before any group state loads (a client authenticates before it can ask
for anything), and holds nothing of the group log. Every change is written to a temporary file, fsynced and
renamed over the old one (then the folder is fsynced), so a crash leaves the old or the new file, never half
of one; the change is acknowledged only after that (persist, then reply). With `--storage memory` nothing is
written.

The file holds salted SCRAM credentials, so it is only ever the owner's: the temporary file is created with
mode 0600 (`os.open` with that mode, never a umask-dependent `open`), so no moment exists in which another
user could read it, and a `security.json` an older version left readable is narrowed to 0600 when loaded.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import structlog

from groupcoord.server.security.scram import ScramCredential

log = structlog.get_logger("groupcoord.security")
MODE = 0o600


class SecurityStore:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.scram: dict[str, dict[str, ScramCredential]] = {}
        self.extra: dict[str, Any] = {}  # other sections (ACLs), kept as they are by this layer

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
        self.extra = {k: v for k, v in data.items() if k != "scram"}

    def save(self) -> None:
        if self.path is None:
            return
        data = dict(self.extra)
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

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.scram.get(user, {}).get(mechanism)

    def set_credential(self, user: str, mechanism: str, cred: ScramCredential) -> None:
        self.scram.setdefault(user, {})[mechanism] = cred

    def delete_credential(self, user: str, mechanism: str) -> bool:
        mechs = self.scram.get(user)
        if not mechs or mechanism not in mechs:
            return False
        del mechs[mechanism]
        if not mechs:
            del self.scram[user]
        return True
