"""Where a cited passage answers: the span of the kind the question asks for.

A source shows the question's words, and in a passage the answer relied on, the part that
answers it: the name for "who", the date for "when", the number for "how many" (kinds from
``answer_types``). Only in the sentences that hold most of the asked words (not every number
near them), and never a month taken for a name, a title alone or the digits of a code.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from ragkit.lang.kinds import DATE, NUMBER, PERSON, PLACE, answer_type, says_count, says_date, typed_spans
from ragkit.lang.text import CJK_CHAR, HEADING, PERSON_TITLES, match_spans, search_tokens, split_sentences

_CODE_PART = re.compile(rf"[^\W_{CJK_CHAR}][-/]?$")  # "550" of "CR-550" is part of a code, not a number said
# The last word of a capitalised name that is a body or a building, not a person ("St. Olaf College").
_NOT_A_PERSON = frozenset(
    "academy agency association bank bridge cathedral center centre church city club college committee company "
    "corporation council county department foundation gallery group hall hospital hotel inc institute island lake "
    "library ltd ministry museum observatory office orchestra park press river road school seminary society "
    "stadium station street team theatre tower trust university".split())


def _across_lines(span: str) -> bool:
    """True when a span runs from one line into the next other than after a title's full
    stop ("Dr.⏎Amelia Hart" is one name, a wrapped line; "Hart⏎North Station" two rows)."""
    return any(not line.rstrip().endswith(".") for line in span.split("\n")[:-1])


def _answering_sentences(text: str, question: str, topic: str) -> list:
    """The sentences of ``text`` that hold most of the question's words, counting only those
    not in ``topic`` (the document's title: "Halcyon Station" is in every sentence of its
    review, "director" only in the one that answers "Who is the director of Halcyon Station?")."""
    sentences = split_sentences(text)
    named = set(search_tokens(topic, stem=False))
    asked = " ".join(word for word in search_tokens(question, stem=False) if word not in named)
    shares = [len(match_spans(sentence.text, asked)) if asked else 0 for sentence in sentences]
    if not any(shares):
        shares = [len(match_spans(sentence.text, question)) for sentence in sentences]
    if not any(shares):  # a passage that shares no word with the question: nothing in it answers
        return []
    return [sentence for sentence, share in zip(sentences, shares) if share == max(shares)]


def answer_spans(text: str, question: str, topic: str = "") -> list[tuple[int, int]]:
    """Spans of ``text`` of the kind ``question`` asks for (a name, a date, a number; see
    ragkit.lang.kinds.typed_spans), sorted and merged: only in the sentences that answer
    (see _answering_sentences: not every number nearby; a line of a table or a list is a
    sentence, so ``text`` keeps its line breaks), never in a heading, and never a capitalised month taken
    for a name ("first lit on 2 November"), nor a title alone ("led by Dr."), nor the digits of a
    code ("CR-550")."""
    kind = answer_type(question)
    text = text.replace("…", ".")  # a quote's parts are sentences: "… Routine checks" opens one (not a name)
    text = HEADING.sub(lambda heading: " " * len(heading.group()), text)  # a heading is a label, not the answer
    spans = [s for s in typed_spans(text, kind, question) if not _across_lines(s.text)]
    if kind == NUMBER:  # "how many" is answered by a number: a month or a season is no count
        spans = [s for s in spans if says_count(s.text)]
    elif kind == DATE:  # "when" is answered by a date or a time: a count is none
        spans = [s for s in spans if says_date(s.text)]
    if kind == PERSON:  # "who" is answered by a person: "St. Olaf College" is an institution
        spans = [s for s in spans if s.text.split()[-1].lower() not in _NOT_A_PERSON]
    if kind in (PERSON, PLACE):
        dates = typed_spans(text, DATE, question)
        spans = [s for s in spans if not any(d.start <= s.start and s.end <= d.end for d in dates)]
    spans = [s for s in spans if s.text.rstrip(".").lower() not in PERSON_TITLES
             and not _CODE_PART.search(text, max(0, s.start - 2), s.start)]
    best = _answering_sentences(text, question, topic) if spans else []
    starts = [sentence.start for sentence in best]  # sentences are disjoint and in order
    spans = [s for s in spans if (at := bisect_left(starts, s.end) - 1) >= 0 and best[at].end > s.start]
    merged: list[tuple[int, int]] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if merged and span.start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(span.end, merged[-1][1]))
        else:
            merged.append((span.start, span.end))
    return merged
