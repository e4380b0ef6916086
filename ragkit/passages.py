"""The passage: one piece of a document, from chunking through search to citation.

A :class:`Passage` is what the chunker cuts, the indexer stores and the catalog returns;
a :class:`Hit` is a passage as a search found it (with its document's current title and
each retriever's score and rank). Citations number hits (``citations.Source``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SECTION_SEPARATOR = " › "  # between the headings of a section path, as shown and exported


def section_trail(section: str) -> str:
    """A stored section path ("Handbook > Safety > Fire exits", the chunker's form) as a reader
    sees it: "Handbook › Safety › Fire exits" ("" when there is none)."""
    return SECTION_SEPARATOR.join(part.strip() for part in section.split(" > ") if part.strip())


def passage_id(doc_id: str, version: int, position: int) -> str:
    """Deterministic passage id: document, version and position."""
    return f"{doc_id}-v{version}-{position}"


@dataclass(frozen=True)
class Passage:
    """A contiguous slice ``page_text[start:end]`` of one document version."""

    text: str
    page: int  # 1-based
    position: int  # 0-based index within the document
    start: int
    end: int
    tokens: int
    doc_id: str = ""  # set when the passage is stored
    version: int = 0
    section: str = ""  # the headings in force where it starts ("Handbook > Safety"); "" when none or unknown
    # its sentences' vectors (``sentence_vectors``), from embedding it; the catalog stores
    # them apart and returns passages without them
    sentence_vectors: "np.ndarray | None" = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        """The passage id (document, version, position)."""
        return passage_id(self.doc_id, self.version, self.position)


@dataclass
class Hit:
    """A passage as retrieved: its document's labels and how each retriever scored it."""

    passage: Passage
    title: str
    filename: str
    doc_type: str
    score: float
    dense_score: float | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    lexical_rank: int | None = None
    same_document: bool = False  # added by the within-document search of an answer
    linked: bool = False  # added because the best passage names its document's title (an answer's next hop)
    parent: Passage | None = None  # the passage with its neighbours, handed to the answer (parent-child)
    url: str = ""  # a web search result's address (never stored; "" for a passage of a document)

    @property
    def id(self) -> str:
        """The passage id."""
        return self.passage.id

    @property
    def doc_id(self) -> str:
        """The document id."""
        return self.passage.doc_id

    @property
    def text(self) -> str:
        """The passage text."""
        return self.passage.text

    @property
    def context(self) -> Passage:
        """What an answer reads and a source shows: the parent passage, else the passage."""
        return self.parent or self.passage

    @property
    def page(self) -> int:
        """1-based page number."""
        return self.passage.page

    @property
    def section(self) -> str:
        """The section path of the passage ("Handbook > Safety > Fire exits"; "" when none)."""
        return self.passage.section

    @property
    def position(self) -> int:
        """Index of the passage within its document."""
        return self.passage.position

    def to_dict(self) -> dict:
        """Plain dict for JSON output."""
        p = self.passage
        return {
            "id": p.id, "doc_id": p.doc_id, "version": p.version, "title": self.title,
            "filename": self.filename, "doc_type": self.doc_type, "page": p.page,
            "position": p.position, "start": p.start, "end": p.end, "section": p.section, "text": p.text,
            "score": self.score, "dense_score": self.dense_score, "lexical_score": self.lexical_score,
            "dense_rank": self.dense_rank, "lexical_rank": self.lexical_rank,
            "same_document": self.same_document,
            "linked": self.linked,
        }


def joined(passages: list[Passage]) -> Passage:
    """Neighbouring passages of one document as one passage (reading order; their overlap,
    known from the offsets, kept once; a page change joined by a blank line)."""
    ordered = sorted(passages, key=lambda p: p.position)
    first = ordered[0]
    text, end, page = first.text, first.end, first.page
    for passage in ordered[1:]:
        if passage.page == page and passage.start < end:
            text += passage.text[end - passage.start:]
        else:
            text += ("\n\n" if passage.page != page else (" " if passage.start > end else "")) + passage.text
        end, page = max(end, passage.end), passage.page
    return Passage(text, first.page, first.position, first.start, end if page == first.page else first.end,
                   sum(p.tokens for p in ordered), first.doc_id, first.version, first.section)
