"""Tags: trimmed, de-duplicated labels on a document, and the limits on what a user gives.

Normalising is linear in the input (a dict keeps the first-seen order), so a long list
costs time in proportion to its length. What a user gives (``ingest --tags``, ``tag``,
the app's tag fields) is checked against :data:`MAX_TAGS` and :data:`MAX_TAG_CHARS`: a
tag is a label to filter by, and every tag is drawn in the documents table and offered
in the chat's filter, so a list of thousands is a mistake (a pasted column of data),
refused with a message rather than stored.
"""

from __future__ import annotations

from ragkit.errors import InputError

MAX_TAGS = 100
"""Most tags a user can give one document at a time."""
MAX_TAG_CHARS = 100
"""Longest tag, in characters."""


def normalize_tags(tags: list[str]) -> list[str]:
    """Trimmed, de-duplicated tags in first-seen order (commas split), in linear time."""
    seen: dict[str, None] = {}
    for raw in tags:
        for tag in str(raw).split(","):
            tag = tag.strip()
            if tag:
                seen.setdefault(tag)
    return list(seen)


def checked_tags(tags: list[str]) -> list[str]:
    """:func:`normalize_tags`, refusing more than MAX_TAGS tags or a tag longer than
    MAX_TAG_CHARS with an InputError that says what to do."""
    normalized = normalize_tags(tags)
    if len(normalized) > MAX_TAGS:
        raise InputError(f"{len(normalized):,} tags given; a document can have at most {MAX_TAGS}: "
                         "use a few broad tags (tags are labels to filter by, not data)")
    longest = max(normalized, key=len, default="")
    if len(longest) > MAX_TAG_CHARS:
        raise InputError(f"a tag of {len(longest):,} characters given; tags can be at most {MAX_TAG_CHARS} "
                         f"characters long (it starts {longest[:20]!r}): shorten it")
    return normalized
