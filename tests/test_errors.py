"""The exception tree: every error ragkit raises on purpose has one base, and callers catch that."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ragkit import errors

REPO = Path(__file__).resolve().parents[1]


def test_every_public_error_derives_from_the_common_base():
    classes = [value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, Exception)]
    assert len(classes) > 10
    assert all(issubclass(cls, errors.RagkitError) for cls in classes)


def test_old_import_paths_name_the_same_classes():
    from ragkit.app.engine import QuestionError
    from ragkit.app.history import SessionError
    from ragkit.config import SettingsError
    from ragkit.ingest.loading import LoaderError
    from ragkit.store.db import DatabaseUnreadable

    assert QuestionError is errors.QuestionError and SettingsError is errors.SettingsError
    assert SessionError is errors.SessionError and LoaderError is errors.LoaderError
    assert DatabaseUnreadable is errors.DatabaseUnreadable


def _catches_everything(handler: ast.ExceptHandler) -> bool:
    return handler.type is None or (isinstance(handler.type, ast.Name)
                                    and handler.type.id in {"Exception", "BaseException"})


def _broad_handlers(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ExceptHandler) and _catches_everything(node)]


PAGES = sorted([*(REPO / "pages").glob("*.py"), REPO / "streamlit_app.py"])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_catch_ragkit_errors_never_everything(page):
    assert _broad_handlers(page) == [], f"{page.name} catches every exception; catch RagkitError"


def test_an_unforeseen_failure_inside_a_turn_reaches_the_caller_as_ours(kb, monkeypatch):
    from ragkit.app.engine import ChatEngine

    engine = ChatEngine(kb.settings, kb)

    def broken_search(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(kb, "search", broken_search)
    with pytest.raises(errors.AnswerFailed, match="ZeroDivisionError"):
        engine.ask("s1", "What is the capital of France?")
    assert not engine.history.exists("s1") or engine.history.turns("s1") == []
