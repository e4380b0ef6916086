"""The code meets the lint rules in pyproject.toml ([tool.ruff]): part of the suite, so the
README's one test command checks it too."""

import subprocess
import sys

from conftest import REPO


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], capture_output=True, text=True, cwd=REPO,
                            timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
