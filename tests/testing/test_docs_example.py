"""The complete example in docs/testing.md runs as written: extracted and run by pytest with the plugin, in
pytest-asyncio's auto mode as written, and in its default strict mode with the one line the docs say to add."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
STRICT_LINE = "pytestmark = pytest.mark.asyncio"


def _example() -> str:
    after = DOC.read_text().split("## A complete example", 1)
    assert len(after) == 2, "docs/testing.md lost its complete example"
    example = re.search(r"```python\n(.*?)```", after[1], re.S)
    assert example is not None, "docs/testing.md lost its python example"
    return example.group(1)


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_the_documented_example_passes_as_a_users_test_file(tmp_path: Path, mode: str) -> None:
    code = _example()
    if mode == "auto":
        (tmp_path / "pytest.ini").write_text(
            "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        )
    else:  # no ini at all: pytest-asyncio's default; the docs' strict-mode line goes after the imports
        assert STRICT_LINE in DOC.read_text()
        code = code.replace("\n\n\nclass ", f"\n\n{STRICT_LINE}\n\n\nclass ", 1)
        assert STRICT_LINE in code
    test_file = tmp_path / "test_my_consumer.py"
    test_file.write_text(code)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=120", str(test_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout
