"""Does a reply answer the question? A reply is not an answer when it

- echoes the question ("电池保修多久？" to "电池保修多久？"): it says nothing the question
  does not already say;
- restates only the subject ("Northwind Lumen Ltd." to "Who founded Northwind Lumen?"):
  all it adds is part of a name the question already holds;
- does not hold the kind of thing asked (``answer_types``: a who → a person, a when → a
  date, a how-many → a number) or, for a how-often question, a frequency ("every 6 months",
  "twice a year", "每半年一次");
- speaks of the question's subject but not of what is asked about it: half or more of the
  question's words are said neither by the sentence nor by the passages it cites
  (``unsaid_asked``: "Orbital Kitchen is a restaurant on the station Meridian [1]" to "Who is
  the head chef of Orbital Kitchen?" over a handbook that names no chef holds a capitalised
  name, yet nothing in it or its source is about a head chef).

- leaves out the number its source gives in answer: the cited sentence that holds most of the
  question's words says a number, and the reply restates that sentence without it ("The
  company's dividend was approved by the board [1]" to "What dividend did the board approve?"
  over "The board approved a dividend of 12 cents per share": English; ``omits_problem``).

``answer_problem`` says which, in words for the trace; "" when the reply answers. Sentences
are checked as well as whole replies (``sentence_answers``) so that a streamed answer is
shown from its first sentence that answers.
"""

from __future__ import annotations

import re

from ragkit.answering.citations import MARKER_RE
from ragkit.lang.kinds import answer_type, holds_answer, kind_naming_words, says_count
from ragkit.lang.text import is_cjk_text, question_words, search_tokens, split_sentences, word_credit

_FREQUENCY_QUESTION = re.compile(r"\bhow\s+(?:often|frequently)\b|\bhow\s+many\s+times\b|多久一次|多长时间一次|"
                                 r"频率|多少次|几次|隔多久|多久.{0,6}(?:换|更换|检查|保养|清洗)", re.IGNORECASE)
_FREQUENCY = re.compile(
    r"\b(?:every|each|per|a|an)\s+(?:\d+\s+|other\s+|few\s+|couple\s+of\s+)?(?:second|minute|hour|day|week|fortnight|"
    r"month|quarter|year|season|time|use|cycle)s?\b|\b(?:once|twice|thrice|\d+\s+times|\w+\s+times)\b|"
    r"\b(?:hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually|biannually|biennially|"
    r"regularly|continuously|never|always)\b|每|一次|两次|\d+\s*次|[一二三四五六七八九十几]次|定期|经常",
    re.IGNORECASE)
_NAME_RUN = re.compile(r"[A-Z][\w'’&.-]*(?:\s+(?:[A-Z][\w'’&.-]*|of|and|de|van|von))*")

# Measured on the shared sets (each answerable question against its own paragraph, and against
# another paragraph of the same article that lacks the answer), share of the question's other words
# left unsaid, rejecting at >= 0.4 / 0.5 / 0.6: squad_notre_dame gold 10.4 % / 4.5 % / 1.1 %, wrong
# paragraph 93.7 % / 85.9 % / 68.0 %; cmrc2018_trial (jieba words) gold 8.4 % / 5.4 % / 1.0 %, wrong
# 76.6 % / 68.9 % / 50.0 %. At half, a correct answer is rarely withheld (it then falls back to the
# quoted passage, never to nothing).
UNSAID_SHARE = 0.5
UNSAID = "neither it nor its sources say what the question asks about"

KIND_WORDS = {"date": "a date", "number": "a number", "person": "a person", "place": "a place",
              "frequency": "a frequency"}


def asked_kind(question: str) -> str | None:
    """The kind of answer asked for: "frequency" for how-often questions, else
    ``answer_types.answer_type`` (date, number, person, place) or None."""
    return "frequency" if _FREQUENCY_QUESTION.search(question) else answer_type(question)


def new_words(reply: str, question: str) -> list[str]:
    """The reply's content words the question does not hold, leaving out the parts of
    names that extend one of the question's ("Ltd." after "Northwind Lumen")."""
    reply = MARKER_RE.sub(" ", reply)
    asked = set(search_tokens(question))
    if not is_cjk_text(reply):
        for run in _NAME_RUN.finditer(reply):
            if set(search_tokens(run.group(0))) & asked:
                reply = reply.replace(run.group(0), " ", 1)
    return [w for w in search_tokens(reply) if w not in asked]


def answer_problem(reply: str, question: str) -> str:
    """Why ``reply`` does not answer ``question`` (for the trace), or "" when it does."""
    text = MARKER_RE.sub(" ", reply).strip()
    if not set(search_tokens(text)):
        return "it is empty"
    if not set(search_tokens(text)) - set(search_tokens(question)):
        return "it only repeats the question"
    if not new_words(text, question):
        return "it only restates the question's subject"
    kind = asked_kind(question)
    if kind == "frequency":
        return "" if _FREQUENCY.search(text) else f"it does not say {KIND_WORDS[kind]}, which the question asks for"
    if kind and holds_answer(text, question) is False:
        return f"it does not say {KIND_WORDS[kind]}, which the question asks for"
    return ""


def sentence_answers(sentence: str, question: str) -> bool:
    """True when this one sentence answers the question (see ``answer_problem``)."""
    return not answer_problem(sentence, question)


OFF_SUBJECT = "it is about something other than what the question asks about"


def about_subject(sentence: str, cited_text: str, question: str) -> bool:
    """True when the sentence, or the passages it cites, hold a content word of the question:
    a terse "17 credits [1]" is about the comet curry when its source is the curry's line; a
    sentence about an office in Osaka, cited to the annual report, is not, however true."""
    if is_cjk_text(question):
        words = question_words(question)
        where = (sentence + " " + cited_text).lower()
        return not words or any(word.lower() in where for word in words)
    wanted = set(search_tokens(question))
    return not wanted or bool(wanted & set(search_tokens(sentence + " " + cited_text)))



def unsaid_asked(sentence: str, cited_text: str, question: str) -> list[str]:
    """The question's words (English stems or Chinese jieba words, leaving out those that name
    the kind asked: ``answer_types.kind_naming_words``) that neither ``sentence`` nor
    ``cited_text`` (the passages it cites, with their titles) say, when they are at least
    ``UNSAID_SHARE`` of them; [] otherwise."""
    if is_cjk_text(question):
        said = (MARKER_RE.sub(" ", sentence) + " " + cited_text).lower()
        words = question_words(question)
        kinds = kind_naming_words(words, question)
        wanted = [word for word in words if word not in kinds]
        missing = [word for word in wanted if not word_credit(word, said)]
        return missing if wanted and len(missing) / len(wanted) >= UNSAID_SHARE else []
    words = list(dict.fromkeys(search_tokens(question)))
    kinds = kind_naming_words(words, question)
    wanted = [word for word in words if word not in kinds]
    present = set(search_tokens(MARKER_RE.sub(" ", sentence) + " " + cited_text))
    missing = [word for word in wanted if word not in present]
    return missing if wanted and len(missing) / len(wanted) >= UNSAID_SHARE else []


OMITS = "it leaves out the number its source gives in answer"


def omits_problem(sentence: str, cited_text: str, question: str) -> str:
    """``OMITS`` when ``sentence`` (English) restates the sentence of ``cited_text`` holding
    most of the question's words (at least ``UNSAID_SHARE`` of them), which says a number,
    without that number or any other word of it the question lacks; "" otherwise."""
    if is_cjk_text(question) or says_count(MARKER_RE.sub(" ", sentence)):
        return ""
    wanted = set(search_tokens(question))
    if not wanted:
        return ""
    best = max(split_sentences(cited_text), key=lambda s: len(wanted & set(search_tokens(s.text))), default=None)
    if best is None or len(wanted & set(search_tokens(best.text))) < UNSAID_SHARE * len(wanted):
        return ""
    if not says_count(best.text) or set(new_words(sentence, question)) & set(search_tokens(best.text)):
        return ""
    return OMITS


def unsaid_problem(sentence: str, cited_text: str, question: str) -> str:
    """``UNSAID`` with the words left unsaid (see ``unsaid_asked``), or ""."""
    missing = unsaid_asked(sentence, cited_text, question)
    return f"{UNSAID} ({', '.join(missing)})" if missing else ""
