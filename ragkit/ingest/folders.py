"""Which files an ingest of paths takes: files named directly, and the supported files
found under named folders, never following a symbolic link found inside a folder.

A folder is often not the user's own work (an unpacked archive, a cloned repository, a
shared drive), and a link in it may lead anywhere: ``notes.txt -> /etc/passwd`` would put
the password file into the knowledge base, where any search shows it. So inside a folder:

- a link to a file or a folder outside it is never followed;
- a link to a file inside it is not followed either: the file is taken under its own
  name, once, instead of twice under two names;
- each skipped link is reported by name, with where it leads, so nothing is left out
  silently; so is a file or folder whose name is not UTF-8 text.

A path named on the command line is the user's explicit choice and is taken as named,
link or not (as ``cat`` or ``cp`` would): ``ingest docs-link/`` walks the folder the link
points to, ``ingest notes-link.txt`` reads the file it points to.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragkit.ingest.registry import is_supported


@dataclass(frozen=True)
class Skipped:
    """A path inside a named folder that was left out, and why (a sentence naming it)."""

    path: Path
    reason: str

    @property
    def message(self) -> str:
        """``<path>: <reason>``, for the user."""
        return f"{self.path}: {self.reason}"


@dataclass
class FileSelection:
    """The files to ingest, in order, and what was left out of the named folders."""

    files: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def collect_files(paths: Iterable[str | Path]) -> FileSelection:
    """Files named directly, plus the supported regular files under named folders
    (sorted per folder); links found inside a folder are skipped and reported."""
    selection = FileSelection()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            _walk(path, selection)
        else:
            selection.files.append(path)  # a missing or odd file is reported by the loader
    return selection


def _walk(folder: Path, selection: FileSelection) -> None:
    root = Path(os.path.realpath(folder))
    found: list[Path] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda entry: entry.name)
        except OSError as exc:
            selection.skipped.append(Skipped(current, f"cannot read this folder ({exc.strerror})"))
            continue
        for entry in entries:
            path = current / entry.name
            if not _utf8(entry.name):
                if entry.is_dir(follow_symlinks=False) or is_supported(entry.name):
                    selection.skipped.append(Skipped(path, "the name is not valid UTF-8 text: rename it to add it"))
            elif entry.is_symlink():
                skipped = _skipped_link(path, root)
                if skipped is not None:
                    selection.skipped.append(skipped)
            elif entry.is_dir(follow_symlinks=False):
                pending.append(path)
            elif entry.is_file(follow_symlinks=False) and is_supported(entry.name):
                found.append(path)
    selection.files.extend(sorted(found))


def _utf8(name: str) -> bool:
    """False for a name holding bytes that are not UTF-8 (os.fsdecode turned them into
    lone surrogates, which no database or terminal takes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _skipped_link(link: Path, root: Path) -> Skipped | None:
    """Why a link inside the folder is not followed; None for a link to a file of a type
    ragkit would not read anyway (such files are left out silently, links or not)."""
    target = Path(os.path.realpath(link))
    if target.is_dir():
        what = "a folder"
    elif target.exists():
        if not is_supported(link.name) and not is_supported(target.name):
            return None
        what = "a file"
    else:
        if not is_supported(link.name):
            return None
        return Skipped(link, f"a symbolic link to {target}, which does not exist: not followed")
    if target == root or root in target.parents:
        shown = target.relative_to(root.parent)
        taken = " (taken under its own name)" if what == "a file" and is_supported(target.name) else ""
        return Skipped(link, f"a symbolic link to {what} inside the folder, {shown}{taken}: links are not followed")
    return Skipped(link, f"a symbolic link to {what} outside the folder, {target}: links inside a folder are "
                         "never followed; name the file itself to add it")
