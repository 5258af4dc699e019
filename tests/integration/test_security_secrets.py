"""Secrets off the command line, credentials on disk for the owner only (issue 30).

The JAAS config (PLAIN users) and the SCRAM users to add come from files (`--sasl-jaas-config-file`,
`--add-scram-file`) or environment variables (`GROUPCOORD_SASL_JAAS_CONFIG`, `GROUPCOORD_ADD_SCRAM`), so no
password shows in the process list; `security.json` is created 0600 whatever the umask, and an older one
readable by others is narrowed when loaded. Real server, raw SASL logins.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ServerProcess, free_port
from tests.integration.security_fixture import authenticate, handshake, scram_login

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
ROOT = Path(__file__).resolve().parents[2]
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-file-secret";'
SCRAM = "SCRAM-SHA-256=[name=alice,password=alice-file-secret]\nSCRAM-SHA-512=[name=alice,password=alice-file-secret]\n"


def start(tmp_path: Path, *extra: str, umask: int | None = None) -> tuple[ServerProcess, int]:
    sasl, plain = free_port(), free_port()
    srv = ServerProcess(
        tmp_path / "data",
        ("--listeners", f"SASL_PLAINTEXT://127.0.0.1:{sasl},PLAINTEXT://127.0.0.1:{plain}", *extra),
        port=plain,
    )
    old = os.umask(umask) if umask is not None else None  # the child inherits the umask
    try:
        srv.start()
    finally:
        if old is not None:
            os.umask(old)
    return srv, sasl


def plain_ok(port: int, user: str, password: str) -> bool:
    c = handshake(port, "PLAIN")
    return authenticate(c, f"\x00{user}\x00{password}".encode()).error_code == 0


def test_users_from_files_log_in_and_no_password_is_on_the_command_line(tmp_path: Path) -> None:
    jaas, scram = tmp_path / "jaas.conf", tmp_path / "scram.txt"
    jaas.write_text(JAAS)
    scram.write_text(SCRAM)
    srv, port = start(tmp_path, "--sasl-jaas-config-file", str(jaas), "--add-scram-file", str(scram), umask=0)
    try:
        assert plain_ok(port, "bob", "bob-file-secret")
        assert not plain_ok(port, "bob", "wrong")
        assert scram_login(port, "alice-file-secret")[2].error_code == 0
        cmdline = Path(f"/proc/{srv.proc.pid}/cmdline").read_bytes()  # type: ignore[union-attr]
        assert b"secret" not in cmdline
        # the SCRAM users were stored at start: the file is the owner's alone, even under umask 000
        store = tmp_path / "data" / "security.json"
        assert stat.S_IMODE(store.stat().st_mode) == 0o600
        assert not (tmp_path / "data" / "security.json.tmp").exists()
    finally:
        srv.kill()


def test_secrets_from_environment_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPCOORD_SASL_JAAS_CONFIG", JAAS)
    monkeypatch.setenv("GROUPCOORD_ADD_SCRAM", SCRAM.replace("\n", ";"))
    srv, port = start(tmp_path)
    try:
        assert plain_ok(port, "bob", "bob-file-secret")
        assert scram_login(port, "alice-file-secret")[2].error_code == 0
    finally:
        srv.kill()


def test_a_security_json_readable_by_others_is_narrowed_to_0600(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store = data / "security.json"
    store.write_text('{"scram": {}}')
    store.chmod(0o644)
    srv, _ = start(tmp_path)
    try:
        assert stat.S_IMODE(store.stat().st_mode) == 0o600
    finally:
        srv.kill()


@pytest.mark.parametrize(
    "args",
    [
        ("--sasl-jaas-config-file", "/nonexistent/jaas.conf"),
        ("--add-scram-file", "/nonexistent/scram.txt"),
        ("--sasl-jaas-config", JAAS, "--sasl-jaas-config-file", "/etc/hostname"),
    ],
)
def test_a_bad_secret_file_setting_is_one_line_and_exit_1(tmp_path: Path, args: tuple[str, ...]) -> None:
    cmd = [
        sys.executable,
        "-m",
        "groupcoord.server",
        "serve",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path),
        *args,
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("groupcoord: ") and "file" in lines[0], done.stderr
