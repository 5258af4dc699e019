"""A coordinator restart keeps its state: locally around a server process this test owns, and in compose
around `compose restart` / `compose kill` of the `coordinator` service (driven by make test-compose, which
sets GROUPCOORD_COMPOSE_PHASE; the phases skip in any other run, where nothing restarts the service)."""

from __future__ import annotations

import os

import pytest

from tests.compose import kept_state
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PHASE = os.environ.get("GROUPCOORD_COMPOSE_PHASE")
RUN = os.environ.get("GROUPCOORD_COMPOSE_RUN", "")


@pytest.mark.owns_server
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_records_configs_groups_and_offsets_survive_a_restart(server_factory, how: str) -> None:
    server = server_factory()
    run = unique("local")
    kept_state.write(server.bootstrap, run)
    if how == "sigterm":
        server.stop()
    else:
        server.kill()
    server.start()
    kept_state.check(server.bootstrap, run)


@pytest.mark.skipif(PHASE != "write", reason="compose phase: run by make test-compose before the restart")
def test_compose_state_written_before_the_coordinator_restart() -> None:
    kept_state.write(os.environ["GROUPCOORD_BOOTSTRAP"], RUN)


@pytest.mark.skipif(PHASE != "check", reason="compose phase: run by make test-compose after each restart")
def test_compose_state_read_back_after_the_coordinator_restart() -> None:
    kept_state.check(os.environ["GROUPCOORD_BOOTSTRAP"], RUN)
