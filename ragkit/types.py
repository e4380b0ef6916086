"""The passage: one piece of a document, from chunking through search to citation.

A :class:`Passage` is what the chunker cuts, the indexer stores and the catalog returns;
a :class:`Hit` is a passage as a search found it (with its document's current title and
each retriever's score and rank). Citations number hits (``citations.Source``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
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


@dataclass
class Source:
    """One numbered source of an answer."""

    n: int
    chunk_id: str
    doc_id: str
    title: str
    filename: str
    page: int
    text: str  # the whole retrieved chunk
    quote: str  # the part the answer relies on (the chunk when unknown)
    start: int
    end: int
    score: float
    dense_score: float | None = None
    lexical_score: float | None = None
    cited: bool = False
    url: str = ""  # a web source's address ("" for a passage of a document)
    section: str = ""  # the passage's section path ("Handbook > Safety"; "" when none or stored before paths were)

    @property
    def web(self) -> bool:
        """True for a web search result (not a passage of the knowledge base)."""
        return bool(self.url)

    @property
    def section_trail(self) -> str:
        """The section path as a reader sees it: "Handbook › Safety › Fire exits" ("" when none)."""
        return section_trail(self.section)

    def to_dict(self) -> dict:
        """Plain dict for JSON and storage."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Source":
        """Inverse of to_dict (unknown keys ignored)."""
        fields = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in fields})


@dataclass
class SearchFilters:
    """Restrict a search to documents by knowledge base, id, tag or type (all given
    conditions must hold). ``knowledge_bases`` is the conversation's scope: a search never
    returns a passage of a document outside it, whatever else is asked."""

    doc_ids: list[str] | None = None
    tags: list[str] | None = None
    doc_types: list[str] | None = None
    knowledge_bases: list[str] | None = None  # knowledge base ids

    def is_empty(self) -> bool:
        """True when nothing is restricted."""
        return not (self.doc_ids or self.tags or self.doc_types or self.knowledge_bases)

    def narrows(self) -> bool:
        """True when documents, tags or types are chosen within the knowledge bases."""
        return bool(self.doc_ids or self.tags or self.doc_types)

    def scope_only(self) -> "SearchFilters":
        """Only the knowledge bases of these filters (a search outside the chosen documents
        that still stays in the conversation's knowledge bases)."""
        return SearchFilters(knowledge_bases=self.knowledge_bases)


@dataclass(frozen=True)
class Exchange:
    """One earlier turn as the rewrite sees it: question (standalone form), answer, and
    the text of the passage that answered it (where its subject is usually named)."""

    question: str
    answer: str
    evidence: str = ""


@dataclass(frozen=True)
class TraceStep:
    """One decision on the way to an answer, in words: ("Graded the evidence", "passage 1
    contains 80% of the question's key words: sufficient")."""

    step: str
    detail: str

    def to_dict(self) -> dict:
        """Plain dict for storage."""
        return {"step": self.step, "detail": self.detail}


@dataclass
class Turn:
    """One question and its answer, with everything needed to show and audit it."""

    question: str
    standalone_question: str
    answer: str
    mode: str  # "extractive", "llm" or "not_found"
    model: str = ""
    sources: list[Source] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    error: str = ""
    filters: dict = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    id: int | None = None
    found: bool = True  # False: the documents do not answer it; ``closest`` shows what came nearest
    closest: list[Source] = field(default_factory=list)
    trace: list[TraceStep] = field(default_factory=list)
    feedback: int | None = None  # THUMBS_UP, THUMBS_DOWN, or None (no feedback)
    feedback_comment: str = ""
    replaced_by: int | None = None  # the turn that replaced this one (regenerated or edited)

    @property
    def live(self) -> bool:
        """True unless a regenerated answer or an edited question replaced this turn."""
        return self.replaced_by is None

    def as_text(self) -> str:
        """The answer as plain text with the sources it cites listed under it ("[1] Title,
        file.pdf, p. 3"): what the app's Copy button puts on the clipboard."""
        cited = [source for source in self.sources if source.cited]
        listed = [f"[{source.n}] {source.title}, web: {source.url}" if source.web else
                  f"[{source.n}] {source.title}, {source.filename}, p. {source.page}" for source in cited]
        return "\n\n".join([self.answer.strip()] + (["\n".join(listed)] if listed else []))

    def to_dict(self) -> dict:
        """Plain dict (sources and trace as dicts) for JSON export."""
        data = asdict(self)
        data["sources"] = [source.to_dict() for source in self.sources]
        data["closest"] = [source.to_dict() for source in self.closest]
        data["trace"] = [step.to_dict() for step in self.trace]
        return data


DEFAULT_KB_ID = "default"


DEFAULT_KB_NAME = "Default"


@dataclass
class DocumentRecord:
    """One document of the knowledge base, as listed to users."""

    id: str
    source: str  # what identifies the file: its path for folder/CLI ingests, else its name
    filename: str
    title: str
    title_from: str  # "file" (taken from the document) or "user" (edited; kept on new versions)
    doc_type: str
    content_hash: str
    version: int
    tags: list[str]
    size_bytes: int
    pages: int
    chunks: int
    tokens: int
    created_at: float
    updated_at: float
    kb_id: str = DEFAULT_KB_ID  # the knowledge base it belongs to
    added_by: str = ""  # the e-mail of who added it ("" without a login)
    changed_by: str = ""  # who made the current version or the last edit of its title or tags

    def to_dict(self) -> dict:
        """Plain dict (for JSON and tables)."""
        return asdict(self)


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    """A knowledge base: a named set of documents that conversations search."""

    id: str
    name: str
    created_at: float
    documents: int = 0

    def to_dict(self) -> dict:
        """Plain dict (for JSON)."""
        return asdict(self)


@dataclass(frozen=True)
class Span:
    """A piece of text and its [start, end) character offsets in the text it came from."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Conversation:
    """A conversation as a turn reads it, in one read: the choices remembered for it (None:
    not chosen) and its live turns, oldest first."""

    session_id: str
    model: str | None = None
    mode: str | None = None
    knowledge_bases: list[str] | None = None
    memory: dict | None = None  # its running summary as stored (``ConversationMemory.to_dict``)
    turns: list[Turn] = field(default_factory=list)
