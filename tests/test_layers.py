"""The shape of the code: imports point down the layers, the pages use only the public API,
no private name crosses a module, no import cycle. Fast: reads the source, runs nothing."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ragkit
import ragkit.app

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([*(REPO / "pages").glob("*.py"), REPO / "streamlit_app.py"])
LIBRARY = sorted((REPO / "ragkit").rglob("*.py"))


def _imports(path: Path):
    """(module, names, line) of every ``from … import …`` and ``import …`` in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, [alias.name for alias in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno


def test_the_import_contracts_hold():
    """pyproject.toml's [tool.importlinter] contracts: the layers, the graph's protocols, the
    dev tools outside the runtime package, no cycle between the modules of a package."""
    linted = subprocess.run([sys.executable, "-c", "import sys, importlinter.cli as c; "
                             "sys.exit(c.lint_imports(no_cache=True, show_timings=False, verbose=False))"],
                            cwd=REPO, capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-2000:]
    assert "BROKEN" not in linted.stdout and "KEPT" in linted.stdout


def test_pages_import_only_the_public_api():
    for path in PAGES:
        for module, names, line in _imports(path):
            if module.startswith("ragkit"):
                assert module in ("ragkit", "ragkit.app"), f"{path.name}:{line} imports {module}"
                public = set(ragkit.__all__) | set(ragkit.app.__all__)
                assert set(names) <= public, f"{path.name}:{line}: {set(names) - public}"


def test_every_public_name_is_importable_and_documented():
    for package in (ragkit, ragkit.app):
        for name in package.__all__:
            value = getattr(package, name)
            if callable(value) and not getattr(value, "__origin__", None):  # a Union alias has no docstring
                assert (value.__doc__ or "").strip(), f"{package.__name__}.{name} has no docstring"


def test_no_private_name_is_imported_across_modules():
    for path in [*LIBRARY, *PAGES]:
        for module, names, line in _imports(path):
            if module.startswith(("ragkit", "pages")):
                private = [name for name in names if name.startswith("_") and not name.startswith("__")
                           and not (REPO / module.replace(".", "/") / f"{name}.py").exists()]  # a helper module
                assert not private, f"{path.relative_to(REPO)}:{line} imports {private} from {module}"


def test_the_library_never_imports_streamlit():
    for path in LIBRARY:
        for module, _, line in _imports(path):
            assert module.split(".")[0] != "streamlit", f"{path.relative_to(REPO)}:{line}"
