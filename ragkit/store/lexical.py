"""BM25 over the passages, updated in place as documents come and go.

Scores follow BM25's Lucene variant (k1 = 1.2, b = 0.75; the variant bm25s uses):
``idf(t) * tf / (tf + k1 * (1 - b + b * len / avg_len))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``, summed over the query's tokens.

bm25s precomputes each passage's score per term, and those depend on N, df and the
average length, so one new file would mean re-indexing everything. Here the inverted
index keeps raw term frequencies and scores at query time, so adding or removing a
document touches only its own passages: new passages go to a small "recent" postings
block, removed ones are masked out, and both are folded into the main block once they
grow past a share of the index. Document frequencies, N and the total length are
exact integers kept up to date, so the scores equal those of a fresh build exactly.

With a ``neighbour_weight`` w, a passage's score is ``(1 - w) * own + w * backed``, where
``backed`` sums, over the query's tokens, the best a token scores in the passage or in one of its
neighbours (the passages either side of it in its document). A chunk that holds the facts
asked about but not the subject they are about (a biography's "1992年4月，任…" two passages
below "罗保铭，天津人") is then backed by the neighbour that names the subject. Only passages
holding a query token are candidates, as without it.

Passage tokens come from the catalog (persisted per passage); ``save``/``load`` keep a
snapshot of the arrays so a large knowledge base reopens without re-reading them all.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragkit.lang.text import CHARACTER_MARK

log = logging.getLogger(__name__)
K1, B = 1.2, 0.75
SNAPSHOT_FORMAT = 2  # 2: lengths leave out the marked Chinese characters


@dataclass(frozen=True)
class LexicalEntry:
    """One passage to index: its id, its document and its search tokens."""

    passage_id: str
    doc_id: str
    terms: list[str]


class _Postings:
    """Term -> (slots, term frequencies) in compressed-row form, built in one pass."""

    def __init__(self, slots: list[int], term_ids: list[np.ndarray], freqs: list[np.ndarray], vocab_size: int):
        if slots:
            rows = np.concatenate(term_ids)
            owner = np.repeat(np.asarray(slots, dtype=np.int32), [len(t) for t in term_ids])
            tf = np.concatenate(freqs)
            order = np.argsort(rows, kind="stable")
            self.slot = owner[order]
            self.tf = tf[order]
            counts = np.bincount(rows, minlength=vocab_size)
        else:
            self.slot = np.zeros(0, dtype=np.int32)
            self.tf = np.zeros(0, dtype=np.float32)
            counts = np.zeros(vocab_size, dtype=np.int64)
        self.ptr = np.zeros(vocab_size + 1, dtype=np.int64)
        np.cumsum(counts, out=self.ptr[1:])
        self.slot_count = len(slots)

    def get(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots holding the term and how often each holds it."""
        if term_id + 1 >= len(self.ptr):
            return self.slot[:0], self.tf[:0]
        start, end = self.ptr[term_id], self.ptr[term_id + 1]
        return self.slot[start:end], self.tf[start:end]


def word_length(terms: list[str]) -> int:
    """A passage's length for BM25: its terms but the marked Chinese characters (at least 1).
    Counted, the characters would lengthen every Chinese passage, and with it the average
    length that English passages of the same index are measured against."""
    return sum(1 for term in terms if not term.startswith(CHARACTER_MARK)) or 1


class LexicalIndex:
    """Incremental BM25 over passages; thread-safe (searches see whole updates only)."""

    def __init__(self, recent_share: float = 0.1, recent_minimum: int = 2000, neighbour_weight: float = 0.0):
        self._lock = threading.RLock()
        self._neighbour_weight = neighbour_weight
        self._recent_share = recent_share
        self._recent_minimum = recent_minimum
        self._reset()

    def _reset(self) -> None:
        self._vocab: dict[str, int] = {}
        self._slot_ids: list[str] = []
        self._slot_of: dict[str, int] = {}
        self._slot_doc: list[str] = []
        self._doc_number: dict[str, int] = {}  # document -> small int, for vectorised filters
        self._slot_docnum = np.zeros(0, dtype=np.int32)
        self._slot_position = np.zeros(0, dtype=np.int64)  # the passage's place in its document
        self._neighbours: tuple[np.ndarray, np.ndarray] | None = None  # None: listed at the next search
        self._slot_terms: list[np.ndarray] = []  # unique term ids per slot (for rebuilds)
        self._slot_freqs: list[np.ndarray] = []
        self._lengths = np.zeros(0, dtype=np.float64)
        self._alive = np.zeros(0, dtype=bool)
        self._doc_slots: dict[str, set[int]] = {}
        self._doc_version: dict[str, int] = {}
        self._df = np.zeros(0, dtype=np.int64)
        self._total_length = 0
        self._main = _Postings([], [], [], 0)
        self._recent_slots: list[int] = []
        self._recent: _Postings | None = _Postings([], [], [], 0)  # None: rebuilt at the next search
        self._dead = 0

    # ----- size --------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._slot_ids) - self._dead

    def passage_ids(self) -> set[str]:
        """Ids of the indexed passages."""
        with self._lock:
            return set(self._slot_of)

    def has(self, passage_id: str) -> bool:
        """True when the passage is indexed (that is, current)."""
        return passage_id in self._slot_of

    def document_of(self, passage_id: str) -> str | None:
        """The document of an indexed passage (None: not indexed)."""
        slot = self._slot_of.get(passage_id)
        return None if slot is None else self._slot_doc[slot]

    def passages_in(self, doc_ids: Iterable[str]) -> int:
        """How many indexed passages these documents hold."""
        with self._lock:
            return sum(len(self._doc_slots.get(doc_id, ())) for doc_id in doc_ids)

    def document_ids(self) -> set[str]:
        """Documents with at least one indexed passage."""
        with self._lock:
            return set(self._doc_slots)

    # ----- updates -----------------------------------------------------------------

    def add(self, entries: Iterable[LexicalEntry]) -> None:
        """Index passages (an id already indexed is replaced)."""
        entries = list(entries)
        with self._lock:
            replaced = [e.passage_id for e in entries if e.passage_id in self._slot_of]
            if replaced:
                self._remove_slots([self._slot_of[pid] for pid in replaced])
            first_new = len(self._slot_ids)
            for entry in entries:
                self._append(entry)
            self._recent_slots.extend(range(first_new, len(self._slot_ids)))
            self._after_change()

    def remove_documents(self, doc_ids: Iterable[str]) -> None:
        """Forget every passage of these documents."""
        with self._lock:
            doc_ids = list(doc_ids)
            for doc in doc_ids:
                self._doc_version.pop(doc, None)
            slots = [slot for doc in doc_ids for slot in self._doc_slots.get(doc, [])]
            if slots:
                self._remove_slots(slots)
                self._after_change()

    def replace_document(self, doc_id: str, version: int, entries: list[LexicalEntry]) -> None:
        """Make ``entries`` the passages of version ``version`` of a document, as one update."""
        with self._lock:
            self.remove_documents([doc_id])
            self.add(entries)
            self._doc_version[doc_id] = version

    def document_versions(self) -> dict[str, int]:
        """The version of each indexed document."""
        with self._lock:
            return dict(self._doc_version)

    def _append(self, entry: LexicalEntry) -> None:
        ids = [self._vocab.setdefault(term, len(self._vocab)) for term in entry.terms] or [
            self._vocab.setdefault("\u2400", len(self._vocab))  # an empty passage still has a length
        ]
        term_ids, freqs = np.unique(np.asarray(ids, dtype=np.int32), return_counts=True)
        slot = len(self._slot_ids)
        self._slot_ids.append(entry.passage_id)
        self._slot_of[entry.passage_id] = slot
        self._place(slot, entry.passage_id, entry.doc_id)
        self._doc_version.setdefault(entry.doc_id, version_of(entry.passage_id))
        self._slot_terms.append(term_ids)
        self._slot_freqs.append(freqs.astype(np.float32))
        if len(self._df) < len(self._vocab):
            self._df = np.concatenate([self._df, np.zeros(max(len(self._vocab) - len(self._df), 1024), dtype=np.int64)])
        self._df[term_ids] += 1
        length = word_length(entry.terms)
        self._total_length += length
        self._lengths = _grow(self._lengths, slot, float(length))
        self._alive = _grow(self._alive, slot, True)

    def _place(self, slot: int, passage_id: str, doc_id: str) -> None:
        self._slot_doc.append(doc_id)
        self._slot_position = _grow(self._slot_position, slot, position_of(passage_id))
        number = self._doc_number.setdefault(doc_id, len(self._doc_number))
        self._slot_docnum = _grow(self._slot_docnum, slot, number)
        self._doc_slots.setdefault(doc_id, set()).add(slot)

    def _remove_slots(self, slots: list[int]) -> None:
        for slot in slots:
            if not self._alive[slot]:
                continue
            self._alive[slot] = False
            self._dead += 1
            self._df[self._slot_terms[slot]] -= 1
            self._total_length -= int(self._lengths[slot])
            del self._slot_of[self._slot_ids[slot]]
            doc_slots = self._doc_slots[self._slot_doc[slot]]
            doc_slots.discard(slot)
            if not doc_slots:
                del self._doc_slots[self._slot_doc[slot]]

    def _after_change(self) -> None:
        self._neighbours = None
        live = len(self._slot_ids) - self._dead
        limit = max(self._recent_minimum, int(self._recent_share * max(live, 1)))
        if len(self._recent_slots) > limit or self._dead > limit:
            self.compact()
        else:
            self._recent = None  # a folder of files is many changes before the next search

    def _recent_postings(self) -> _Postings:
        if self._recent is None:
            self._recent = self._postings(self._recent_slots)
        return self._recent

    def compact(self) -> None:
        """Fold recent passages into the main block and drop removed ones (renumbers slots)."""
        with self._lock:
            keep = [slot for slot in range(len(self._slot_ids)) if self._alive[slot]]
            entries = [(self._slot_ids[s], self._slot_doc[s], self._slot_terms[s], self._slot_freqs[s],
                        self._lengths[s]) for s in keep]
            vocab, df, total, versions = self._vocab, self._df, self._total_length, self._doc_version
            self._reset()
            self._vocab, self._df, self._total_length, self._doc_version = vocab, df, total, versions
            for slot, (pid, doc, terms, freqs, length) in enumerate(entries):
                self._slot_ids.append(pid)
                self._slot_of[pid] = slot
                self._place(slot, pid, doc)
                self._slot_terms.append(terms)
                self._slot_freqs.append(freqs)
            self._lengths = np.asarray([e[4] for e in entries], dtype=np.float64)
            self._alive = np.ones(len(entries), dtype=bool)
            self._main = self._postings(list(range(len(entries))))

    def _postings(self, slots: list[int]) -> _Postings:
        return _Postings(slots, [self._slot_terms[s] for s in slots], [self._slot_freqs[s] for s in slots],
                         len(self._vocab))

    # ----- scoring -----------------------------------------------------------------

    def _idf(self, term_id: int) -> float:
        live = len(self._slot_ids) - self._dead
        df = int(self._df[term_id])
        return float(np.log(1 + (live - df + 0.5) / (df + 0.5)))

    def idf(self, terms: list[str]) -> dict[str, float]:
        """Inverse document frequency of each term over the indexed passages (unknown
        terms get the idf of a term found nowhere)."""
        with self._lock:
            live = len(self._slot_ids) - self._dead
            if not live:
                return {term: 1.0 for term in terms}
            result = {}
            for term in terms:
                term_id = self._vocab.get(term)
                result[term] = self._idf(term_id) if term_id is not None else float(np.log(1 + (live + 0.5) / 0.5))
            return result

    def search(self, terms: list[str], k: int, allowed_docs: set[str] | None = None,
               backing: float | None = None) -> list[tuple[str, float]]:
        """The ``k`` best (passage id, score) for the query tokens, best first; only
        passages with a positive score, only of ``allowed_docs`` when given; ``backing``:
        this query's neighbour weight (None: the index's)."""
        if k <= 0:
            return []
        with self._lock:
            scores = self._scores(terms, backing)
            if scores is None:
                return []
            candidates = np.flatnonzero(scores > 0)
            if allowed_docs is not None:
                admitted = np.zeros(len(self._doc_number) + 1, dtype=bool)
                admitted[[self._doc_number[d] for d in allowed_docs if d in self._doc_number]] = True
                candidates = candidates[admitted[self._slot_docnum[candidates]]]
            if not len(candidates):
                return []
            values = scores[candidates]
            if len(candidates) > k:
                top = np.argpartition(-values, k - 1)[:k]
                candidates, values = candidates[top], values[top]
            order = np.lexsort((candidates, -values))
            return [(self._slot_ids[candidates[i]], float(values[i])) for i in order]

    def scores(self, terms: list[str]) -> dict[str, float]:
        """Every passage's positive score for the query tokens (for tests and checks)."""
        with self._lock:
            scores = self._scores(terms)
            if scores is None:
                return {}
            return {self._slot_ids[slot]: float(scores[slot]) for slot in np.flatnonzero(scores > 0)}

    def _scores(self, terms: list[str], backing: float | None = None) -> np.ndarray | None:
        count = len(self._slot_ids)
        live = count - self._dead
        term_ids = [self._vocab[t] for t in terms if t in self._vocab]
        if not live or not term_ids:
            return None
        average = self._total_length / live
        norm = K1 * (1 - B + B * self._lengths[:count] / average)
        scores = np.zeros(count, dtype=np.float64)
        weight = self._neighbour_weight if backing is None else backing
        backed = _Backing(count, self._neighbour_slots()) if weight > 0 else None
        for term_id in term_ids:  # repeated query words count again, as in bm25s
            if not self._df[term_id]:
                continue
            idf = self._idf(term_id)
            found = []
            for block in (self._main, self._recent_postings()):
                slots, tf = block.get(term_id)
                if len(slots):
                    found.append((slots, idf * tf / (tf + norm[slots])))
            for slots, term_scores in found:
                scores[slots] += term_scores
            if backed is not None and found:
                backed.add(np.concatenate([slots for slots, _ in found]),
                           np.concatenate([term_scores for _, term_scores in found]))
        if backed is not None:
            scores = np.where(scores > 0, (1 - weight) * scores + weight * backed.total[:count], 0.0)
        scores[~self._alive[:count]] = 0.0
        return scores

    def _neighbour_slots(self) -> tuple[np.ndarray, np.ndarray]:
        """Each slot's previous and next live passage of its document (the slot count: none)."""
        if self._neighbours is None:
            count = len(self._slot_ids)
            before, after = np.full(count, count, dtype=np.int64), np.full(count, count, dtype=np.int64)
            live = np.flatnonzero(self._alive[:count])
            ordered = live[np.lexsort((self._slot_position[live], self._slot_docnum[live]))]
            first, second = ordered[:-1], ordered[1:]
            adjacent = (self._slot_docnum[first] == self._slot_docnum[second]) & \
                       (self._slot_position[second] - self._slot_position[first] == 1)
            after[first[adjacent]], before[second[adjacent]] = second[adjacent], first[adjacent]
            self._neighbours = (before, after)
        return self._neighbours

    # ----- snapshot ----------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the index to ``path`` (a compacted snapshot; atomic replace)."""
        with self._lock:
            self.compact()
            vocab = np.asarray(sorted(self._vocab, key=self._vocab.get), dtype=object)
            sizes = np.asarray([len(t) for t in self._slot_terms], dtype=np.int64)
            tmp = path.with_name(path.name + ".tmp")
            try:
                with tmp.open("wb") as handle:
                    np.savez(
                        handle,
                        format=np.asarray([SNAPSHOT_FORMAT]),
                        vocab=np.asarray(vocab, dtype=str) if len(vocab) else np.zeros(0, dtype=str),
                        slot_ids=np.asarray(self._slot_ids, dtype=str),
                        slot_doc=np.asarray(self._slot_doc, dtype=str),
                        lengths=self._lengths,
                        sizes=sizes,
                        terms=np.concatenate(self._slot_terms) if self._slot_terms else np.zeros(0, dtype=np.int32),
                        freqs=np.concatenate(self._slot_freqs) if self._slot_freqs else np.zeros(0, dtype=np.float32),
                    )
                tmp.replace(path)
            except BaseException:
                tmp.unlink(missing_ok=True)  # a full disk: no half-written file left behind
                raise

    def load(self, path: Path) -> bool:
        """Replace the index by the snapshot at ``path``; False (and the index unchanged)
        when it is missing, unreadable or inconsistent in any way: it is only a cache of
        the catalog, so the caller rebuilds from there."""
        try:
            snapshot = _read_snapshot(path)
        except Exception as exc:  # noqa: BLE001 - truncated, emptied, flipped bytes: all mean "rebuild"
            if path.exists():
                log.info("the lexical snapshot %s is unusable (%s: %s); rebuilding it", path, type(exc).__name__, exc)
            return False
        vocab, slot_ids, slot_doc, lengths, terms, freqs = snapshot
        with self._lock:
            self._reset()
            self._vocab = {term: index for index, term in enumerate(vocab)}
            self._df = np.zeros(len(vocab), dtype=np.int64)
            for slot, (pid, doc) in enumerate(zip(slot_ids, slot_doc)):
                self._slot_ids.append(pid)
                self._slot_of[pid] = slot
                self._place(slot, pid, doc)
            self._slot_terms, self._slot_freqs = list(terms), list(freqs)
            if len(slot_ids):
                np.add.at(self._df, np.concatenate(terms), 1)
            self._lengths = lengths
            self._total_length = int(lengths.sum())
            self._alive = np.ones(len(slot_ids), dtype=bool)
            self._main = self._postings(list(range(len(slot_ids))))
            self._doc_version = {doc: version_of(pid) for pid, doc in zip(slot_ids, slot_doc)}
        return True

    def clear(self) -> None:
        """Drop everything (the caller re-adds every passage)."""
        with self._lock:
            self._reset()


def _read_snapshot(path: Path) -> tuple:
    """The arrays of a snapshot, checked for consistency; raises on anything wrong."""
    with np.load(path, allow_pickle=False) as data:
        if int(data["format"][0]) != SNAPSHOT_FORMAT:
            raise ValueError(f"snapshot format {data['format'][0]}, not {SNAPSHOT_FORMAT}")
        vocab = [str(term) for term in data["vocab"]]
        slot_ids = [str(pid) for pid in data["slot_ids"]]
        slot_doc = [str(doc) for doc in data["slot_doc"]]
        lengths = data["lengths"].astype(np.float64)
        sizes = data["sizes"].astype(np.int64)
        all_terms = data["terms"].astype(np.int64)
        all_freqs = data["freqs"].astype(np.float32)
    slots = len(slot_ids)
    if not (len(slot_doc) == len(lengths) == len(sizes) == slots):
        raise ValueError("per-passage arrays of different lengths")
    if len(set(slot_ids)) != slots or len(set(vocab)) != len(vocab):
        raise ValueError("repeated passage ids or terms")
    if (sizes < 0).any() or int(sizes.sum()) != len(all_terms) or len(all_freqs) != len(all_terms):
        raise ValueError("term arrays do not match their sizes")
    if len(all_terms) and (all_terms.min() < 0 or all_terms.max() >= len(vocab)):
        raise ValueError("term numbers outside the vocabulary")
    if not np.isfinite(lengths).all() or (lengths < 0).any() or not np.isfinite(all_freqs).all() \
            or (all_freqs <= 0).any():
        raise ValueError("negative or missing lengths or frequencies")
    bounds = np.cumsum(sizes)[:-1]
    terms = [part.astype(np.int32) for part in np.split(all_terms, bounds)] if slots else []
    freqs = np.split(all_freqs, bounds) if slots else []
    if any(len(np.unique(part)) != len(part) for part in terms):
        raise ValueError("a passage lists a term twice")
    return vocab, slot_ids, slot_doc, lengths, terms, freqs


class _Backing:
    """Sums, token by token, the best score of each passage and its two neighbours."""

    def __init__(self, count: int, neighbours: tuple[np.ndarray, np.ndarray]):
        self.total = np.zeros(count + 1, dtype=np.float64)  # the last entry stands for "no neighbour"
        self._score = np.zeros(count + 1, dtype=np.float64)  # one token's scores, zero between tokens
        self._before, self._after = neighbours
        self._nobody = count

    def add(self, slots: np.ndarray, term_scores: np.ndarray) -> None:
        """Add one token's scores (of the passages holding it, each once): each passage and
        each neighbour of one gains the best of the three. Only the holders and their
        neighbours are visited (no sort, no ``ufunc.at``: a few gathers per token)."""
        score, before, after = self._score, self._before, self._after
        score[slots] = term_scores
        self.total[slots] += np.maximum(term_scores, np.maximum(score[before[slots]], score[after[slots]]))
        beside = np.concatenate([before[slots], after[slots]])
        beside = beside[(beside != self._nobody) & (score[beside] == 0)]
        # a passage between two holders is listed twice with the same value: a fancy-indexed
        # ``+=`` adds it once, which is what is meant
        self.total[beside] += np.maximum(score[before[beside]], score[after[beside]])
        score[slots] = 0.0


def position_of(passage_id: str) -> int:
    """The position in a passage id ("<doc>-v<version>-<position>"), 0 if none."""
    position = passage_id.rsplit("-", 1)[-1]
    return int(position) if position.isdigit() else 0


def version_of(passage_id: str) -> int:
    """The document version in a passage id ("<doc>-v<version>-<position>"), 0 if none."""
    parts = passage_id.rsplit("-", 2)
    return int(parts[1][1:]) if len(parts) == 3 and parts[1][1:].isdigit() else 0


def _grow(array: np.ndarray, index: int, value) -> np.ndarray:
    """``array`` with ``array[index] = value``, doubling its capacity when needed."""
    if index >= len(array):
        bigger = np.zeros(max(2 * len(array), index + 1, 64), dtype=array.dtype)
        bigger[: len(array)] = array
        array = bigger
    array[index] = value
    return array
