"""Durable security state: SCRAM credentials (and, with the authorizer, ACL bindings).

One small JSON file, `<data-dir>/security.json`, owned by this room rather than the group StateStore: it
changes rarely, must be readable before any group state loads (a client authenticates before it can ask
for anything), and holds nothing of the group log. Every change is written to a temporary file, fsynced and
renamed over the old one (then the folder is fsynced), so a crash leaves the old or the new file, never half
of one; the change is acknowledged only after that (persist, then reply). With `--storage memory` nothing is
written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from groupcoord.server.security.scram import ScramCredential


class SecurityStore:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.scram: dict[str, dict[str, ScramCredential]] = {}
        self.extra: dict[str, Any] = {}  # other sections (ACLs), kept as they are by this layer

    def load(self) -> None:
        if self.path is None or not self.path.exists():
            return
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
        with open(tmp, "w") as fh:
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
