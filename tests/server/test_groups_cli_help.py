"""`groupcoord groups` and `groupcoord share-groups` as a newcomer reads their --help (issue #36 item 5): every
option says what it does, --bootstrap-server is shown required (and is), and reset-offsets without a mode
prints our own warning, not Kafka's about its next major version."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from groupcoord.server.ops.groups_cli import NO_EXECUTE_WARNING, add_groups_arguments
from groupcoord.server.ops.share_groups_cli import add_share_groups_arguments
from tests.conftest import ROOT

COMMANDS = {"groups": add_groups_arguments, "share-groups": add_share_groups_arguments}
ACTIONS = {
    "groups": ("list", "describe", "reset-offsets", "delete", "delete-offsets"),
    "share-groups": ("list", "describe", "reset-offsets", "delete", "delete-offsets"),
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord.server", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def parsers(command: str) -> dict[str, argparse.ArgumentParser]:
    top = argparse.ArgumentParser(prog=f"groupcoord {command}")
    COMMANDS[command](top)
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {"": top, **sub.choices}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_every_action_has_help(command: str) -> None:
    missing = [
        f"{action or command} {a.option_strings[0] if a.option_strings else a.dest}"
        for action, p in parsers(command).items()
        for a in p._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help
    ]
    assert missing == []


@pytest.mark.parametrize("command", COMMANDS)
def test_bootstrap_server_is_shown_required_and_is(command: str) -> None:
    for action in ("", *ACTIONS[command]):
        shown = run(command, *([action] if action else []), "--help")
        assert shown.returncode == 0, shown.stderr
        usage = shown.stdout.split("\n\n", 1)[0]
        assert re.search(r"(?<!\[)--bootstrap-server HOST:PORT(?!\])", usage), usage
        assert "[--bootstrap-server" not in usage, usage
    missing = run(command, "list")
    assert missing.returncode == 2
    assert "--bootstrap-server is required" in missing.stderr


def test_reset_offsets_warning_is_ours() -> None:
    assert "5.0" not in NO_EXECUTE_WARNING and "--execute" in NO_EXECUTE_WARNING
