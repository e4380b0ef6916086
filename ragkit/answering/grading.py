"""Judging the retrieved evidence before answering: is the answer likely in these passages?

Offline, two measures over the best three passages, each against its own threshold (they
are on different scales); the one further above (or less below) its threshold decides:

- coverage: the share of the question's informative words (weighted by how rare they
  are in the knowledge base) that one passage contains; for Chinese, jieba words of the
  question found in the passage text (partial credit for a long name found in pieces);
- similarity: the embedding similarity between the question and the closest sentence
  (English only: the packaged model knows no Chinese), the question without the knowledge
  base's topic words (``topic_words``: "Notre Dame" in a knowledge base about Notre Dame).

Before either, answer-type cues: a "when / how many / 多少" question whose passages hold no
date or number at all cannot be answered from them, and a question asking for a date, a
number, a person or a place is not answered from passages that only name its subject
without saying such a thing about it ("What is the population of Jan Mayen?" over a page that
names Jan Mayen only as a station's island; "Who is the head chef of Orbital Kitchen?" over a
handbook naming no chef). Which kinds are checked is a setting per script (``grade_kinds_latin``,
``grade_kinds_cjk``), chosen with the thresholds by cross-validation (scripts/grade_cv.py).

A question whose subject the knowledge base never mentions ("the population of Quarnova")
covers little: its rarest word is missing. The thresholds (``grade_threshold_cjk``,
``grade_threshold_latin`` and ``grade_similarity_threshold`` in Settings) were chosen by
5-fold cross-validation over both shared sets (scripts/grade_cv.py on ``eval --unanswerable``). A configured
model grades instead through structured output; when it returns something unusable the
offline grade decides and the trace says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from ragkit.config import Settings
from ragkit.lang.kinds import answer_type, kind_naming_words, says_kind
from ragkit.lang.text import (
    CJK_NUMBER_QUESTION,
    is_cjk_text,
    is_heading,
    question_words,
    search_tokens,
    split_sentences,
    word_credit,
)
from ragkit.lang.topic import topic_words, without_topic
from ragkit.types import Hit

PASSAGES_GRADED = 3
SENTENCES_COMPARED = 24


@dataclass(frozen=True)
class Grade:
    """How well the evidence answers the question, and who judged it."""

    score: float
    threshold: float
    by: str  # "offline", "model", or "offline (model output unusable)"
    reason: str

    @property
    def sufficient(self) -> bool:
        """True when the evidence is good enough to answer from."""
        return self.score >= self.threshold

    @property
    def margin(self) -> float:
        """How far the score is above its threshold (below: negative): what ranks rounds
        graded by different measures (roughly: cosine margins run narrower than coverage's)."""
        return self.score - self.threshold


class EvidenceVerdict(BaseModel):
    """What a model is asked to return when it grades the evidence."""

    sufficient: bool = Field(description="true if the passages contain the answer to the question")
    reason: str = Field(description="one short sentence: what in the passages answers it, or what is missing")


# "How much / how many" only asks for an amount: "much" and "many" are no words a passage must say.
_HOW_MUCH = re.compile(r"\bhow\s+(?:much|many)\b", re.IGNORECASE)


def question_terms(question: str) -> tuple[list[str], frozenset[str]]:
    """The question's informative words (Chinese jieba words, or English stems), each once
    in question order, and those of them that only name the kind of answer asked for
    (``answer_types.kind_naming_words``: credited when a passage has them, never missed)."""
    if is_cjk_text(question):
        words = question_words(question)
    else:
        words = list(dict.fromkeys(search_tokens(_HOW_MUCH.sub("how", question))))
    return words, kind_naming_words(words, question)


def coverage(question: str, hits: list[Hit], idf: dict[str, float]) -> tuple[float, int]:
    """The best share of the question's IDF-weighted words one passage contains, and
    the index of that passage. A word naming the kind of answer counts only where said.
    A passage says its document's title and its section path too (``_header_words``): a
    passage is one section, so "How tall are the Orion Bridge towers?" is answered by the
    "Dimensions" passage of the Orion Bridge document, whose sentences never repeat its name."""
    if not hits:
        return 0.0, -1
    words, kind_words = question_terms(question)
    cjk = is_cjk_text(question)
    weights = {word: word_idf(word, idf) if cjk else idf.get(word, 1.0) for word in words}
    shares = []
    for hit in hits:
        credit = _credit(words, hit.text, cjk)
        for word in _header_words(words, f"{hit.title}\n{hit.section}"):
            credit[word] = 1.0
        said = sum(weights[word] * credit[word] for word in words)
        mass = sum(weights[word] * (credit[word] if word in kind_words else 1.0) for word in words)
        shares.append(said / mass if mass else 0.0)
    best = max(range(len(shares)), key=shares.__getitem__)
    return shares[best], best


def _header_words(words: list[str], header: str) -> list[str]:
    """The question ``words`` a passage's title and section path say: whole words (a Chinese
    word anywhere in a Chinese title), never a number ("report-2023", "passage-00012" name
    files, they say no number) nor a letter found inside a word ("P." in "passage")."""
    tokens = set(search_tokens(header)) | set(search_tokens(header, stem=False))
    return [word for word in words if not any(ch.isdigit() for ch in word)
            and (word in tokens or (is_cjk_text(word) and word in header))]


def _credit(words: list[str], text: str, cjk: bool) -> dict[str, float]:
    """How much of each question word ``text`` says: Chinese words by ``word_credit`` (a long
    name found in pieces earns part), English stems 1 or 0."""
    if cjk:
        folded = text.lower()
        return {word: word_credit(word, folded) for word in words}
    present = set(search_tokens(text))
    return {word: float(word in present) for word in words}


def unsaid(question: str, text: str) -> list[str]:
    """The question's informative words that ``text`` does not say: English stems, or
    Chinese jieba words (a long name found in pieces counts as said), in question order;
    words that only name the kind of answer are never missing."""
    words, kind_words = question_terms(question)
    credit = _credit(words, text, is_cjk_text(question))
    return [word for word in words if word not in kind_words and not credit[word]]


def word_idf(word: str, idf: dict[str, float]) -> float:
    """A question word's idf: its search tokens' mean (1.0 when none is known)."""
    values = [idf[token] for token in search_tokens(word) if token in idf]
    return sum(values) / len(values) if values else 1.0


def closest_sentence(question: str, hits: list[Hit], embed, topic: frozenset[str] = frozenset()) -> tuple[float, str]:
    """The highest embedding similarity between the question and a sentence of the hits
    (among the sentences sharing most words with it), and that sentence. The question is
    compared without its ``topic`` words (``topic_words``): "Notre Dame" in every question and
    sentence of a knowledge base about Notre Dame makes each sentence resemble each question."""
    question = without_topic(question, topic)
    wanted = set(search_tokens(question))
    # a Markdown heading is a label: a question resembles its subject's title without being answered by it
    sentences = [span.text for hit in hits for span in split_sentences(hit.text)
                 if len(span.text) > 12 and not is_heading(span.text)]
    if not sentences or embed is None:
        return 0.0, ""
    sentences.sort(key=lambda s: -len(wanted & set(search_tokens(s))))
    shortlist = sentences[:SENTENCES_COMPARED]
    vectors = embed([question] + shortlist)
    similarities = vectors[1:] @ vectors[0]
    best = int(similarities.argmax())
    return float(similarities[best]), shortlist[best]


@dataclass(frozen=True)
class GradeParts:
    """What the offline grade measures of the evidence before any threshold is applied."""

    cjk: bool
    empty: bool  # no passage to grade
    number_missing: bool  # a date or number is asked for and no passage holds one
    kind: str | None  # the kind of answer asked for (answer_types)
    kind_said: bool | None  # a sentence near the subject says a thing of that kind (None: not checked)
    share: float  # word coverage of the best passage
    where: int  # that passage's index


def grade_parts(question: str, hits: list[Hit], idf: dict[str, float], about: tuple[str, ...] = (),
                checked: tuple[str, ...] | None = None) -> GradeParts:
    """The threshold-free measures of the best ``PASSAGES_GRADED`` hits for ``question``
    (``about``: see ``grade_offline``); whether a passage says the kind asked is looked for
    only when that kind is in ``checked`` (None: every kind; tagging Chinese words costs time)."""
    graded = hits[:PASSAGES_GRADED]
    cjk = is_cjk_text(question)
    if not graded:
        return GradeParts(cjk, True, False, None, None, 0.0, -1)
    number_missing = wants_number(question) and not any(holds_number(hit.text) for hit in graded)
    share, where = coverage(question, graded, idf)
    kind = answer_type(question)
    said = says_asked_kind(question, graded, idf, about) if checked is None or kind in checked else None
    return GradeParts(cjk, False, number_missing, kind, said, share, where)


def grade_offline(question: str, hits: list[Hit], idf: dict[str, float], embed, settings: Settings,
                  about: tuple[str, ...] = (), topic: frozenset[str] = frozenset()) -> Grade:
    """The offline grade of ``hits`` as evidence for ``question``, against the thresholds
    in ``settings``. ``about``: names that stand for the question's subject too (a chain's
    bridges: the date a chain asks for is said about the thing its last hop reached);
    ``topic``: words the closest sentence is compared without (``topic_words``)."""
    checked = settings.grade_kinds_cjk if is_cjk_text(question) else settings.grade_kinds_latin
    parts = grade_parts(question, hits, idf, about, tuple(checked))
    decided = parts.empty or parts.number_missing or kind_unsaid(parts, settings)
    similarity, sentence = (0.0, "") if parts.cjk or decided else \
        closest_sentence(question, hits[:PASSAGES_GRADED], embed, topic)
    return grade_from_parts(parts, similarity, sentence, settings, similarity_threshold(question, topic, settings))


def similarity_threshold(question: str, topic: frozenset[str], settings: Settings) -> float:
    """What the closest sentence's similarity must reach: ``grade_similarity_threshold`` for a
    question compared without its topic words, ``grade_similarity_threshold_whole`` for one
    compared whole (a knowledge base without a topic, a mixed or a small one, or a question
    naming none of it): each was cross-validated on questions compared that way."""
    if without_topic(question, topic) != question:
        return settings.grade_similarity_threshold
    return settings.grade_similarity_threshold_whole


def grade_evidence(question: str, hits: list[Hit], passages, settings: Settings, about: tuple[str, ...] = ()) -> Grade:
    """``grade_offline`` over a knowledge base (``retriever.PassageRetriever``): its idf of the
    question's words, its topic words (``topic_words``) and its sentence vectors."""
    idf = passages.idf(question)
    topic = topic_words(idf, passages.indexed_passages(), settings.grade_topic_share,
                        settings.grade_topic_min_passages)
    return grade_offline(question, hits, idf, passages.embed_sentences, settings, about, topic)


def kind_unsaid(parts: GradeParts, settings: Settings) -> bool:
    """True when the question asks for a kind of thing the grade checks (``grade_kinds_cjk``,
    ``grade_kinds_latin``) and no passage says one near its subject."""
    checked = settings.grade_kinds_cjk if parts.cjk else settings.grade_kinds_latin
    return parts.kind in checked and parts.kind_said is False


def grade_from_parts(parts: GradeParts, similarity: float, sentence: str, settings: Settings,
                     similarity_needed: float | None = None) -> Grade:
    """The grade from its measures (``grade_parts``, and the closest sentence's similarity for
    English) against the thresholds in ``settings`` (the similarity's: ``similarity_needed``,
    see ``similarity_threshold``, else ``grade_similarity_threshold``)."""
    threshold = settings.grade_threshold_cjk if parts.cjk else settings.grade_threshold_latin
    if parts.empty:
        return Grade(0.0, threshold, "offline", "no passage matched the question")
    if parts.number_missing:
        return Grade(0.0, threshold, "offline", "the question asks for a date or number and no passage holds one")
    if kind_unsaid(parts, settings):
        return Grade(0.0, threshold, "offline",
                     f"the question asks for a {parts.kind} and no passage says one about its subject")
    by_words = Grade(round(parts.share, 3), threshold, "offline",
                     f"passage {parts.where + 1} contains {parts.share:.0%} of the question's key words")
    if parts.cjk:
        return by_words
    needed = settings.grade_similarity_threshold if similarity_needed is None else similarity_needed
    by_meaning = Grade(round(similarity, 3), needed, "offline",
                       f"closest sentence similarity {similarity:.2f}: “{_clip(sentence)}”")
    return max(by_words, by_meaning, key=lambda grade: grade.margin)


# Answer-type cues: "when / how many / 多少 / 哪一年" questions are answered by a date or a number.
_LATIN_NUMBER_QUESTION = re.compile(
    r"^\s*(?:when|how\s+(?:many|much|long|old|far|often|tall|high|big|large|wide|deep))\b"
    r"|\b(?:what|which)\s+(?:year|date|decade|century|percentage|number|age)\b", re.IGNORECASE)
_NUMBER_IN_TEXT = re.compile(
    r"\d|[零一二三四五六七八九十百千万亿两]|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen|half|century|decade)\b", re.IGNORECASE)


SUBJECT_WORDS = 2  # the question's rarest words stand for its subject


def says_asked_kind(question: str, hits: list[Hit], idf: dict[str, float], about: tuple[str, ...] = ()) -> bool | None:
    """Whether a passage says a thing of the kind the question asks for (a date, a number, a
    person, a place: ``answer_types.says_kind``) near the question's subject, not only names
    the subject: in a sentence that holds one of the question's rarest words (a rare word no
    passage says, such as "chef" in "Who is the head chef of Orbital Kitchen?", is what the
    question asks about and stays one), or anywhere in a passage under the subject's heading
    or in a document whose title names it (a sentence after the one naming the subject is not
    enough: "Charles Babbage was born in 1791" after "The Analytical Engine was designed by
    Charles Babbage"); a sentence holding one of
    the names ``about`` is about the subject too. None when the question asks for no kind this
    can check."""
    kind = answer_type(question)
    if kind is None:
        return None
    cjk = is_cjk_text(question)
    words, kind_words = question_terms(question)
    subject = [word for word in words if word not in kind_words]
    if not subject:
        return None
    rarity = (lambda word: word_idf(word, idf)) if cjk else (lambda word: idf.get(word, 1.0))
    rarest = subject_words(subject, hits, rarity, cjk)
    for hit in hits:
        # under the subject's heading, or in a document titled by it ("Aurora Analytics report":
        # "The company expects to open an office in Osaka" is about Aurora Analytics)
        titled = names_any(rarest, hit.section, cjk) or names_any(rarest, hit.title, cjk)
        for sentence in split_sentences(hit.text):
            named = titled or names_any(rarest, sentence.text, cjk) or _names_any(sentence.text, about)
            if named and says_kind(sentence.text, kind, question):
                return True
    return False


def subject_words(words: list[str], hits: list[Hit], rarity, cjk: bool) -> list[str]:
    """The ``SUBJECT_WORDS`` rarest of a question's ``words`` (by ``rarity``), which stand for
    its subject. A rare word no passage says stays one while the passages say at most half
    the words ("chef" in "Who is the head chef of Orbital Kitchen?" over a handbook saying
    only "Orbital Kitchen": what is asked about is missing); when they say most of them, a
    word they do not say is the question's own wording ("oversaw" for "under the direction
    of"), and the subject is the rarest words they say."""
    ordered = sorted(words, key=lambda word: -rarity(word))  # stable: ties keep question order
    said = [word for word in ordered if any(names_any([word], text, cjk) for hit in hits
                                            for text in (hit.text, hit.section, hit.title))]
    return (said if 2 * len(said) > len(words) else ordered)[:SUBJECT_WORDS]


def _names_any(text: str, names: tuple[str, ...]) -> bool:
    folded = text.lower()
    return any(name.lower() in folded for name in names)


def names_any(words: list[str], text: str, cjk: bool) -> bool:
    """True when ``text`` says one of ``words`` (Chinese: wholly or in pieces)."""
    if not text:
        return False
    if cjk:
        folded = text.lower()
        return any(word_credit(word, folded) > 0 for word in words)
    return bool(set(words) & set(search_tokens(text)))


def wants_number(question: str) -> bool:
    """True for a question whose answer is a date or a number."""
    if is_cjk_text(question):
        return bool(CJK_NUMBER_QUESTION.search(question))
    return bool(_LATIN_NUMBER_QUESTION.search(question))


def holds_number(text: str) -> bool:
    """True when ``text`` holds a digit, a Chinese numeral or an English number word."""
    return bool(_NUMBER_IN_TEXT.search(text))


def _clip(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
