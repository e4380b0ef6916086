"""Who may change the documents, when people log in with an identity provider.

With a login that knows people (OIDC through ``st.login``), each person is their e-mail
address: their conversations are theirs (``HistoryManager``'s ``owner``), and
``RAGKIT_EDITORS`` (e-mail addresses and domains, comma-separated) says who may add, edit
and delete documents; everyone else may ask. Without a login, or with the one shared
password (no identities), everyone may change documents, as before. The library checks
it too (:func:`check_editor`), not only the pages.
"""

from __future__ import annotations

from ragkit.config import Settings
from ragkit.errors import NotAllowed


def editor_rules(editors: str) -> tuple[set[str], set[str]]:
    """(e-mail addresses, domains) of a ``RAGKIT_EDITORS`` value, lower-cased."""
    addresses, domains = set(), set()
    for entry in (part.strip().lower() for part in editors.split(",")):
        if not entry:
            continue
        if "@" in entry.lstrip("@"):
            addresses.add(entry)
        else:
            domains.add(entry.lstrip("@"))
    return addresses, domains


def may_edit(settings: Settings, person: str | None) -> bool:
    """Whether ``person`` (an e-mail; None: no identity, as with no login or the password)
    may add, edit and delete documents."""
    if person is None or not settings.editors.strip():
        return True
    addresses, domains = editor_rules(settings.editors)
    email = person.strip().lower()
    return email in addresses or email.rpartition("@")[2] in domains


def check_editor(settings: Settings, person: str | None, what: str) -> None:
    """NotAllowed, naming the person and the setting, unless they may ``what``."""
    if not may_edit(settings, person):
        raise NotAllowed(f"{person} may ask questions but not {what}: only the editors named in RAGKIT_EDITORS "
                         "may add, edit or delete documents.")
