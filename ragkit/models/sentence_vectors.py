"""Sentence vectors made at ingest, for the ``sentences`` reranker.

The reranker scores a candidate passage by its best sentence, partly by the sentence's
cosine with the question. Embedding each candidate's sentences at query time cost about
1.7 s a search on 2 cores; instead, each passage's sentences are pooled from the token
vectors of the pass that embeds the passage (the mean of the tokens inside each sentence,
as the model pools a whole text), so they cost no model time at all. Measured on the
shared English set with the reranker on (``eval``): hit@1 / hit@5 / MRR@10 0.877 /
0.981 / 0.921 with pooled vectors, 0.877 / 0.985 / 0.922 with each sentence embedded
alone.

A passage's sentences are ``split_sentences(passage.text)``, in order; their vectors are
stored quantized to int8 with one scale per sentence (a sentence of the packaged model
in 388 bytes; cosines within about 0.01 of the float vectors'). A sentence that has no
token in the model's window (past its 256 tokens) is stored as zeros, which the
reranker treats as missing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragkit.lang.text import SENTENCE_SPLITTER_VERSION, split_sentences

STORED_META = "sentence_vectors"  # catalog meta: "stored" when passages get sentence vectors at ingest
SPLITTER_META = "sentence_splitter"  # catalog meta: the SENTENCE_SPLITTER_VERSION they were made under
_HEADER = np.dtype("<u4")  # the vectors' dimension, before the rows


def mark_stored(catalog, pooled: bool) -> None:
    """Record in ``catalog`` whether its passages get sentence vectors from now on (``pooled``:
    the embedder pools them) and under which sentence splitter."""
    catalog.set_meta(STORED_META, "stored" if pooled else "none")
    catalog.set_meta(SPLITTER_META, str(SENTENCE_SPLITTER_VERSION))


def vectors_current(catalog) -> bool:
    """True when ``catalog``'s passages have sentence vectors, made under today's sentence
    splitter: vectors of other boundaries would be scored against the wrong sentences. A
    store from before the splitter was recorded was made under its first version."""
    if catalog.get_meta(STORED_META) != "stored":
        return False
    return (catalog.get_meta(SPLITTER_META) or "1") == str(SENTENCE_SPLITTER_VERSION)


def vectors_stale(catalog) -> bool:
    """True when ``catalog``'s stored sentence vectors were made under another sentence
    splitter: read as they are, they would be scored against the wrong sentences."""
    return catalog.get_meta(STORED_META) == "stored" and not vectors_current(catalog)


def reindex_advice(catalog, pools_sentences: Callable[[], bool], reranker: str) -> str | None:
    """Why ``python -m ragkit reindex`` would sharpen this store's search, or None: it holds
    passages without current sentence vectors while the ``auto`` reranker and an embedder
    that pools them (``pools_sentences()``, asked last: it may load the model) would use them."""
    if reranker != "auto" or not catalog.passage_count() or vectors_current(catalog) or not pools_sentences():
        return None
    why = ("its sentences were split differently then" if catalog.get_meta(STORED_META) == "stored"
           else "it was indexed before passages kept sentence vectors")
    return (f"Search does not rerank passages by their best sentence in this knowledge base: {why}. "
            "Run `python -m ragkit reindex` once to turn it on (on the shared English set a new store put "
            "the right passage first for 0.900 of the questions).")


def sentence_spans(text: str, section: str) -> list[tuple[int, int]]:
    """The character spans of ``text``'s sentences inside ``contextual_text(text, section)``
    (the text that is embedded: the section path on a line above the passage)."""
    shift = len(section) + 1 if section else 0
    return [(span.start + shift, span.end + shift) for span in split_sentences(text)]


def pool_sentences(hidden: np.ndarray, offsets: list[tuple[int, int]],
                   spans: list[tuple[int, int]]) -> np.ndarray:
    """One L2-normalised vector per span: the mean of the token vectors (``hidden``, one row
    per token, ``offsets`` their character spans, (0, 0) for special tokens) that lie inside
    it; a span with no such token gets zeros."""
    pooled = np.zeros((len(spans), hidden.shape[1]), dtype=np.float32)
    starts = np.asarray([start for start, _ in offsets])
    ends = np.asarray([end for _, end in offsets])
    real = ends > starts
    for row, (start, end) in enumerate(spans):
        inside = real & (starts >= start) & (ends <= end)
        if inside.any():
            vector = hidden[: len(offsets)][inside].mean(axis=0)
            pooled[row] = vector / max(float(np.linalg.norm(vector)), 1e-12)
    return pooled


def pack(vectors: np.ndarray) -> bytes:
    """``vectors`` (sentences x dimension) as bytes: the dimension, a float32 scale per row,
    then the rows quantized to int8."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scales = np.abs(vectors).max(axis=1) / 127.0 if len(vectors) else np.zeros(0, dtype=np.float32)
    safe = np.where(scales > 0, scales, 1.0)[:, None]
    quantized = np.rint(vectors / safe).astype(np.int8)
    return (np.asarray([vectors.shape[1]], dtype=_HEADER).tobytes() + scales.astype("<f4").tobytes()
            + quantized.tobytes())


def unpack(blob: bytes) -> np.ndarray:
    """The vectors ``pack`` stored (rows of zeros stay zeros)."""
    dimension = int(np.frombuffer(blob, dtype=_HEADER, count=1)[0])
    rest = blob[_HEADER.itemsize:]
    count = len(rest) // (4 + dimension)
    scales = np.frombuffer(rest, dtype="<f4", count=count)
    quantized = np.frombuffer(rest, dtype=np.int8, offset=4 * count).reshape(count, dimension)
    return quantized.astype(np.float32) * scales[:, None]
