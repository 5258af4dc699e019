"""The plugin as a user's project meets it: its fixtures work in pytest-asyncio's default strict mode (no
configuration at all) and in auto mode, and `pytest --fixtures` documents every one of them.

Each project runs in a subprocess (`runpytest_subprocess`) from a temp dir with no ini of ours above it, so
this repository's own `asyncio_mode = auto` cannot leak into the strict run."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.integration

# What a user writes. `{mark}` is `pytestmark = pytest.mark.asyncio` for strict mode, nothing for auto mode.
USER_TESTS = """
import pytest
{mark}

async def test_the_fixture_is_a_started_server(groupcoord):
    assert groupcoord.bootstrap.startswith("127.0.0.1:")
    before = groupcoord.now_ms()
    assert await groupcoord.advance(5_000) == before + 5_000
    assert groupcoord.describe("nobody-here").state == "Dead"


async def test_the_factory_starts_more_servers(groupcoord_factory):
    one = await groupcoord_factory()
    two = await groupcoord_factory(group_initial_rebalance_delay_ms=3000)
    assert one.bootstrap != two.bootstrap
    assert await two.advance(10) == two.now_ms()


@pytest.mark.groupcoord(offsets_retention_minutes=1)
async def test_options_come_from_the_marker(groupcoord):
    assert groupcoord.broker.config.offsets_retention_minutes == 1
"""


def _run(pytester: pytest.Pytester, mark: str, ini: str | None) -> pytest.RunResult:
    pytester.makepyfile(test_user=USER_TESTS.format(mark=mark))
    if ini is not None:
        pytester.makeini(ini)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--timeout=120", timeout=300)


def test_fixtures_work_in_pytest_asyncio_strict_mode_with_no_configuration(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "pytestmark = pytest.mark.asyncio", ini=None)
    out = result.stdout.str()
    assert re.search(r"asyncio: mode=(Mode\.)?strict", out, re.I), out  # pytest-asyncio's header
    result.assert_outcomes(passed=3)


def test_fixtures_work_in_pytest_asyncio_auto_mode(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester, "", ini="[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    assert re.search(r"asyncio: mode=(Mode\.)?auto", result.stdout.str(), re.I), result.stdout.str()
    result.assert_outcomes(passed=3)


def test_pytest_fixtures_shows_a_docstring_for_every_fixture_of_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str()
    section = re.search(
        r"-+ fixtures defined from groupcoord\.testing\.plugin -+\n(.*?)(?:\n-+ |\n=+ |\Z)", out, re.S
    )
    assert section is not None, out
    entries = re.findall(r"^(\w+)(?: \[\w+ scope\])? -- .*\n((?:    .*\n?)*)", section.group(1), re.M)
    names = {name for name, _ in entries}
    assert names == {"groupcoord", "groupcoord_factory", "groupcoord_process", "groupcoord_session"}, out
    for name, doc in entries:
        assert doc.strip() and "no docstring available" not in doc, f"{name} has no docstring:\n{out}"
