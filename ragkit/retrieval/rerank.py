"""Reranking the top of a hybrid search (setting ``RAGKIT_RERANKER``).

- ``sentences`` (offline, no new weights): each candidate passage is scored by its best
  sentence, the one that best both holds the question's words and means what it asks: the
  share of the question's word weight (BM25 idf) the sentence holds plus the packaged model's
  cosine between the sentence and the question. A question is mostly written against one
  sentence, which shares its rare words and its sense; a passage that names the subject in
  one sentence and the asked thing in another, or whose words match but mean something
  else, scores lower. The standard score of that sentence score, times ``rerank_weight``, is
  added to the fused one's. Measured on the shared English set (top 10 reranked, weight
  0.75, ``eval``): hit@1 0.825 -> 0.877, MRR@10 0.894 -> 0.922 (replayed on stored candidates:
  the cosine alone, the earlier reranker, 0.840 / 0.903; the word share alone 0.848 / 0.905).
  The sentences' vectors are pooled at ingest from the pass that embeds each passage and
  stored (``sentence_vectors``), so a search reads them instead of embedding sentences
  (which cost about 1.7 s a search on 2 cores). ``auto``, the default, is this reranker on
  a knowledge base that stores them (any created, or re-indexed, by this version, with a
  model that pools them) over the 5 passages a search returns (``rerank_depth``), and none
  on an older one, whose searches would embed every candidate's sentences; sentences
  without a stored vector (past the model's window, or of a document indexed before) are
  embedded once and remembered. With the int8 model of a new store: hit@1 / MRR@10 0.836 /
  0.899 -> 0.863 / 0.913. The cosine is half with the question without the knowledge base's
  topic words (``rerank_topicless_cosine``; ``topic``: "Notre Dame" in every question and
  sentence of a base about it makes every sentence resemble every question), and a sentence
  naming a span of years holds the years inside it the question names (``rerank_year_ranges``:
  "from 1946 to 1952" answers "in 1947"): with the kind bonus, 0.874 / 0.918 -> 0.885 / 0.927
  (the topicless cosine alone 0.881 / 0.925, the year spans alone 0.877 / 0.921).
- a directory: a local sentence-transformers ``CrossEncoder`` the user downloaded (for
  example a bge or ms-marco reranker); its scores replace the order of the top candidates.
  Nothing is ever downloaded: a directory that is not there is an error naming the setting.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ragkit.config import Settings
from ragkit.errors import RerankerError
from ragkit.lang.kinds import answer_type, typed_spans, years_named, years_spanned
from ragkit.lang.text import is_cjk_text, search_tokens, share_scorer, split_sentences, token_share
from ragkit.lang.topic import without_topic

SPLIT_MEMORY = 4096  # passages whose sentences and their tokens the sentence reranker remembers




def standard(values) -> np.ndarray:
    """Standard scores; all equal values are all 0."""
    array = np.asarray(values, dtype=np.float64)
    spread = array.std()
    return (array - array.mean()) / spread if spread > 1e-9 else np.zeros_like(array)


def word_share_scorer(query: str, idf):
    """A function giving the share of the query's word weight a sentence holds: the summed idf
    of the query's distinct search tokens found in it over their total (``text.share_scorer``).
    ``idf`` maps a list of tokens to their idf (``LexicalIndex.idf``)."""
    return share_scorer(_query_weights(query, idf))


def _query_weights(query: str, idf) -> dict[str, float]:
    words = list(dict.fromkeys(search_tokens(query)))
    return idf(words) if words else {}


class SentenceReranker:
    """Best-sentence evidence: the question's word share plus its cosine, per sentence
    (see module docstring). ``stored`` gives passages' stored sentence vectors by id
    (``Catalog.sentence_vectors``); sentences without one are embedded here, once each.
    ``query_vector`` embeds the question (the retriever's, which remembers it)."""

    def __init__(self, embedder, weight: float, idf=None, stored=None, query_vector=None,
                 weight_cjk: float | None = None, only_stored: bool = False, kind_bonus: float = 0.0,
                 topic=None, topicless_cosine: float = 0.0, year_ranges: bool = False):
        self._embedder = embedder
        self.kind_bonus = kind_bonus  # added to a sentence holding a thing of the kind the question asks for
        # the knowledge base's topic words among the query's (their idf -> ``topic.topic_words``)
        self._topic = topic or (lambda weights: frozenset())
        self.topicless_cosine = topicless_cosine  # the cosine's share taken with the question without them
        self.year_ranges = year_ranges  # a span of years holding a year the question names holds that year
        self._idf = idf or (lambda words: {word: 1.0 for word in words})
        self._stored = stored or (lambda ids: {})
        self._query_vector = query_vector or (lambda query: self._embedder().embed_query(query))
        self.weight = weight
        self.weight_cjk = weight if weight_cjk is None else weight_cjk
        # "auto": rerank only where sentence vectors come stored, never embedding them all
        self.only_stored = only_stored
        self._split: OrderedDict[str, tuple[list[str], list[frozenset[str]]]] = OrderedDict()
        self._split_lock = threading.Lock()

    def sentence_scores(self, query: str, texts: list[str],
                        stored: list[np.ndarray | None] | None = None) -> list[float]:
        """Each text's best sentence score: word share + cosine with the query, plus
        ``kind_bonus`` for a sentence holding a thing of the kind asked that the question does
        not name (a year for "In what year…", a name for "Who…": ``answer_types``) (``stored``:
        each text's stored sentence vectors, or None). The cosine is taken, for the share
        ``topicless_cosine``, with the question without the knowledge base's topic words; with
        ``year_ranges``, a sentence naming a span of years holds the question's years inside it."""
        weights = _query_weights(query, self._idf)
        question = self._question_vector(query, weights)
        share = token_share(weights)
        years = years_named(query) if self.year_ranges else set()
        kind = answer_type(query) if self.kind_bonus else None
        best = []
        for text, kept in zip(texts, stored or [None] * len(texts)):
            sentences, tokens = self._sentences(text)
            if years:
                tokens = [words | years_spanned(sentence, years) for sentence, words in zip(sentences, tokens)]
            # word share and cosine count alike: both run 0-1 over a passage's sentences
            scores = np.asarray([share(words) for words in tokens]) + self._cosines(sentences, kept, question)
            if kind is not None:
                scores += self.kind_bonus * np.asarray([bool(typed_spans(s, kind, query)) for s in sentences])
            best.append(float(scores.max()))
        return best

    def _question_vector(self, query: str, weights: dict[str, float]) -> np.ndarray:
        """What sentences are compared with: the question's vector, blended (``topicless_cosine``)
        with that of the question without its topic words. Cosine is linear in the question's
        vector, so a sentence's cosine with the blend is the blend of its two cosines."""
        question = self._query_vector(query)
        if not self.topicless_cosine:
            return question
        rest = without_topic(query, self._topic(weights))
        if rest == query:
            return question
        return (1 - self.topicless_cosine) * question + self.topicless_cosine * self._query_vector(rest)

    def _sentences(self, text: str) -> tuple[list[str], list[frozenset[str]]]:
        """``text``'s sentences and each one's search tokens, remembered for the
        ``SPLIT_MEMORY`` texts used last (a passage is a candidate of many questions)."""
        with self._split_lock:
            if text in self._split:
                self._split.move_to_end(text)
                return self._split[text]
        sentences = [span.text for span in split_sentences(text)] or [text]
        found = (sentences, [frozenset(search_tokens(sentence)) for sentence in sentences])
        with self._split_lock:
            self._split[text] = found
            while len(self._split) > SPLIT_MEMORY:
                self._split.popitem(last=False)
        return found

    def _cosines(self, sentences: list[str], kept: np.ndarray | None, question: np.ndarray) -> np.ndarray:
        """Each sentence's cosine with the question: from its stored vector when the stored
        rows match the sentences (zeros: a sentence past the model's window), else embedded."""
        if kept is None or kept.shape != (len(sentences), len(question)):
            return self._embedder().embed_remembered(sentences) @ question
        cosines = kept @ question
        missing = np.flatnonzero(~np.any(kept, axis=1))
        if len(missing):
            cosines[missing] = self._embedder().embed_remembered([sentences[i] for i in missing]) @ question
        return cosines

    def rerank(self, query: str, items: list[tuple[str, float]], texts: dict[str, str]) -> list[tuple[str, float]]:
        """``items`` (passage id, fused score) in their new order, with combined scores
        (unchanged for a question whose script's weight is 0)."""
        weight = self.weight_cjk if is_cjk_text(query) else self.weight
        if not weight or (self.only_stored and not getattr(self._embedder(), "pools_sentences", False)):
            return items
        ids = [pid for pid, _ in items]
        kept = self._stored(ids)
        best = self.sentence_scores(query, [texts.get(pid, "") for pid in ids], [kept.get(pid) for pid in ids])
        combined = standard([score for _, score in items]) + weight * standard(best)
        order = np.argsort(-combined, kind="stable")
        return [(items[i][0], float(combined[i])) for i in order]


class CrossEncoderReranker:
    """A local sentence-transformers CrossEncoder directory, loaded once on first use."""

    def __init__(self, location: str):
        self.location = Path(location).expanduser()
        if not self.location.is_dir():
            raise RerankerError(f"RAGKIT_RERANKER: {self.location} is not a directory holding a CrossEncoder model "
                                "(download one yourself, e.g. a bge reranker, and name its folder; nothing is "
                                "downloaded at run time), or use 'sentences' or 'none'")
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                try:
                    self._model = CrossEncoder(str(self.location), device="cpu", local_files_only=True)
                except Exception as exc:
                    raise RerankerError(f"RAGKIT_RERANKER: cannot load the CrossEncoder in {self.location} "
                                        f"({type(exc).__name__}: {exc})") from None
            return self._model

    def rerank(self, query: str, items: list[tuple[str, float]], texts: dict[str, str]) -> list[tuple[str, float]]:
        """``items`` ordered by the cross-encoder's score of (query, passage)."""
        scores = self._load().predict([(query, texts.get(pid, "")) for pid, _ in items])
        order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
        return [(items[i][0], float(scores[i])) for i in order]


def make_reranker(setting: str, embedder, idf=None, weight: float | None = None, stored=None,
                  query_vector=None, sentence_vectors_stored: bool = False, weight_cjk: float | None = None,
                  kind_bonus: float | None = None, topic=None, topicless_cosine: float | None = None,
                  year_ranges: bool | None = None):
    """The reranker named by ``setting``: "none" -> None; "auto" -> the sentence reranker
    where ``sentence_vectors_stored`` (the knowledge base keeps its passages' sentence
    vectors, so it costs milliseconds) and the embedder pools them, else None; "sentences"; or a CrossEncoder directory.
    ``idf`` (the lexical index's), ``weight``, ``weight_cjk``, ``kind_bonus``, ``topicless_cosine``
    and ``year_ranges`` (None: ``Settings``' defaults), ``stored``, ``query_vector`` and ``topic``
    (the query's topic words from their idf) are the sentence reranker's."""
    if not setting or setting == "none" or (setting == "auto" and not sentence_vectors_stored):
        return None
    if setting in ("sentences", "auto"):
        def chosen(name: str, value):
            return Settings.model_fields[name].default if value is None else value

        return SentenceReranker(embedder, chosen("rerank_weight", weight), idf, stored, query_vector,
                                chosen("rerank_weight_cjk", weight_cjk), only_stored=setting == "auto",
                                kind_bonus=chosen("rerank_kind_bonus", kind_bonus), topic=topic,
                                topicless_cosine=chosen("rerank_topicless_cosine", topicless_cosine),
                                year_ranges=chosen("rerank_year_ranges", year_ranges))
    return CrossEncoderReranker(setting)
