"""The pytest plugin (entry point `pytest11: groupcoord`): fixtures and failing-test logs.

- `groupcoord`: an in-process coordinator on the test's loop, virtual clock on, memory storage. Options via
  `@pytest.mark.groupcoord(subprocess=True, group_initial_rebalance_delay_ms=3000, ...)`.
- `groupcoord_factory`: `await groupcoord_factory(**options)` for more, or differently configured, servers.
- `groupcoord_process`: a subprocess coordinator for synchronous tests (blocking clients).
- `groupcoord_session`: one subprocess coordinator for the whole session (controlled over HTTP).
A failing test's report gets the subprocess servers' logs.

The async fixtures are declared with `pytest_asyncio.fixture`, so they work in pytest-asyncio's default
strict mode (the test itself carries `@pytest.mark.asyncio`) as well as with `asyncio_mode = auto`; a plain
`pytest.fixture` async generator is only picked up in auto mode, and in strict mode the test errors at setup.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

try:
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pytest-asyncio missing (`groupcoord[testing]` brings it): the sync fixtures still work
    async_fixture = pytest.fixture

from groupcoord.testing.inprocess import GroupCoord, start_groupcoord
from groupcoord.testing.remote import GroupCoordProcess, spawn_groupcoord

Server = GroupCoord | GroupCoordProcess
Factory = Callable[..., Awaitable[Server]]

_PROCS = pytest.StashKey[list[GroupCoordProcess]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "groupcoord(**options): options for the groupcoord fixture (subprocess=True for a process)"
    )


@async_fixture
async def groupcoord_factory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Factory]:
    """`await groupcoord_factory(subprocess=False, virtual_clock=True, **options)` starts one more coordinator
    (in-process on the test's loop, or a child process with `subprocess=True`); `options` are Kafka config
    names in underscores. Every server it started is stopped after the test."""
    started: list[Server] = []
    procs = request.node.stash.setdefault(_PROCS, [])

    async def make(*, subprocess: bool = False, virtual_clock: bool = True, **options: object) -> Server:
        data_dir = tmp_path / f"groupcoord{len(started)}"
        server: Server
        if subprocess:
            server = spawn_groupcoord(data_dir, virtual_clock=virtual_clock, **options)
            procs.append(server)
        else:
            server = await start_groupcoord(data_dir, virtual_clock=virtual_clock, **options)
        started.append(server)
        return server

    yield make
    for server in reversed(started):
        if isinstance(server, GroupCoord):
            await server.stop()
        else:
            server.stop()


@async_fixture
async def groupcoord(request: pytest.FixtureRequest, groupcoord_factory: Factory) -> Server:
    """A coordinator on a free loopback port for this test: in-process on the test's loop (virtual clock,
    memory storage, no initial-rebalance delay), options from `@pytest.mark.groupcoord(name=value, ...)`,
    `subprocess=True` for a child process. Use `.bootstrap` for clients, `.advance(ms)` to move the clock."""
    marker = request.node.get_closest_marker("groupcoord")
    options = dict(marker.kwargs) if marker is not None else {}
    return await groupcoord_factory(**options)


@pytest.fixture
def groupcoord_process(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GroupCoordProcess]:
    """A subprocess coordinator for synchronous tests with blocking clients (kafka-python, confluent-kafka);
    options from `@pytest.mark.groupcoord(...)`; controlled over HTTP (`advance_sync`, `wait_group_sync`)."""
    marker = request.node.get_closest_marker("groupcoord")
    options = dict(marker.kwargs) if marker is not None else {}
    options.pop("subprocess", None)
    server = spawn_groupcoord(tmp_path / "groupcoord", **options)
    request.node.stash.setdefault(_PROCS, []).append(server)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def groupcoord_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GroupCoordProcess]:
    """One subprocess coordinator (virtual clock) shared by the whole session, controlled over HTTP; tests
    that share it should each use group ids of their own."""
    server = spawn_groupcoord(tmp_path_factory.mktemp("groupcoord-session") / "data")
    request.config.stash.setdefault(_PROCS, []).append(server)
    yield server
    server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    report = yield
    if report.failed:
        for server in item.stash.get(_PROCS, []) + item.config.stash.get(_PROCS, []):
            report.sections.append((f"groupcoord log ({server.bootstrap})", server.log()))
    return report
