"""Citations as structured data: numbered sources and the [n] markers that point at them.

Sources are built from the retrieved chunks, not parsed back out of the answer. The
answer's markers are then checked against the list: a marker with no source is
removed, and sources no marker points at are kept as "also retrieved".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragkit.lang.text import is_cjk_text, readable_passage, search_tokens, split_sentences
from ragkit.types import Hit, Source

MARKER_RE = re.compile(r"\[(\d{1,3}(?:\s*[,，]\s*\d{1,3})*)\]")




def sources_from_hits(hits: list[Hit]) -> list[Source]:
    """Number retrieved chunks 1..n in rank order."""
    return [
        Source(
            n=index,
            chunk_id=hit.id,
            doc_id=hit.doc_id,
            title=hit.title,
            filename=hit.filename,
            page=hit.context.page,
            text=hit.context.text,
            quote=readable_passage(hit.text),
            start=hit.context.start,
            end=hit.context.end,
            score=round(hit.score, 4),
            dense_score=None if hit.dense_score is None else round(hit.dense_score, 4),
            lexical_score=None if hit.lexical_score is None else round(hit.lexical_score, 4),
            url=hit.url,
            section=hit.section,
        )
        for index, hit in enumerate(hits, start=1)
    ]




def validate_markers(answer: str, sources: list[Source]) -> str:
    """Drop markers that name no source, normalise [1,2] to [1][2], flag cited sources."""
    valid = {source.n for source in sources}
    cited: set[int] = set()

    def replace(match: re.Match) -> str:
        numbers = [int(part) for part in re.split(r"\s*[,，]\s*", match.group(1))]
        kept = [n for n in dict.fromkeys(numbers) if n in valid]
        cited.update(kept)
        return "".join(f"[{n}]" for n in kept)

    cleaned = MARKER_RE.sub(replace, answer)
    cleaned = re.sub(r"(?<![ \t])[ \t]+([.,;:!?。，；：！？])", r"\1", cleaned)  # linear: one start per run
    for source in sources:
        source.cited = source.n in cited
    return cleaned.strip()


def cited_markers(answer: str) -> list[int]:
    """The marker numbers in an answer, in order of first appearance."""
    found: list[int] = []
    for match in MARKER_RE.finditer(answer):
        for part in re.split(r"\s*[,，]\s*", match.group(1)):
            if int(part) not in found:
                found.append(int(part))
    return found


def focus_quotes(answer: str, sources: list[Source], max_sentences: int = 2) -> None:
    """Narrow each cited source's quote to the chunk sentences closest to the answer
    sentences that cite it (the whole chunk stays in ``text``)."""
    claims: dict[int, list[str]] = {}
    for sentence in split_sentences(answer):
        for n in cited_markers(sentence.text):
            claims.setdefault(n, []).append(MARKER_RE.sub("", sentence.text))
    for source in sources:
        if not source.cited or source.n not in claims:
            continue
        wanted = set(search_tokens(" ".join(claims[source.n])))
        candidates = split_sentences(source.text)
        if not wanted or len(candidates) <= max_sentences:
            continue
        scored = sorted(
            ((len(wanted & set(search_tokens(c.text))), index) for index, c in enumerate(candidates)),
            reverse=True,
        )
        best = sorted(index for overlap, index in scored[:max_sentences] if overlap > 0)
        if best:
            source.quote = " … ".join(candidates[index].text for index in best)


@dataclass(frozen=True)
class MatchStrength:
    """How much of a question one passage holds, in words ("strong match"), with the counts
    behind the word and the raw retrieval scores for whoever wants them."""

    label: str  # "strong match", "partial match" or "weak match"
    found: int  # the question's key words the passage holds
    wanted: int  # the question's key words
    scores: str  # the retrieval numbers, in words: for a tooltip or a trace

    @property
    def detail(self) -> str:
        """'holds 3 of the question's 4 key words'."""
        return f"holds {self.found} of the question's {self.wanted} key words"


def match_strength(question: str, source: Source, settings) -> MatchStrength:
    """The passage's match with ``question`` as a word: strong when it holds at least the
    share of the question's key words that the evidence grader calls sufficient
    (``grade_threshold_latin`` / ``grade_threshold_cjk`` in ``settings``), partial from half
    of that, weak below. Relevance scores are normalised to the best passage of each search
    (the best is always 1.00), so they cannot say how good a match is; key words can."""
    strong_share = settings.grade_threshold_cjk if is_cjk_text(question) else settings.grade_threshold_latin
    wanted = set(search_tokens(question))
    found = len(wanted & set(search_tokens(source.text))) if wanted else 0
    share = found / len(wanted) if wanted else 0.0
    label = ("strong match" if share >= strong_share else "partial match" if share >= strong_share / 2
             else "weak match")
    scores = [f"relevance {source.score:.2f} (the best passage of the search is 1.00)"]
    if source.dense_score is not None:
        scores.append(f"semantic similarity {source.dense_score:.2f}")
    if source.lexical_score is not None:
        scores.append(f"keyword score (BM25) {source.lexical_score:.2f}")
    return MatchStrength(label, found, len(wanted), " · ".join(scores))
