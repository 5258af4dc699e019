"""The complete example in docs/testing.md runs as written: extracted and run by pytest with the plugin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def test_the_documented_example_passes_as_a_users_test_file(tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert example is not None, "docs/testing.md lost its python example"
    test_file = tmp_path / "test_my_consumer.py"
    test_file.write_text(example.group(1))
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=120", str(test_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout
