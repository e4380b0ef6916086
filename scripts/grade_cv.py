"""Cross-validated thresholds for the offline evidence grade (``ragkit.answering.grading``).

``record``: the ``eval --unanswerable`` setup of each shared set (half the articles indexed,
every question asked through the chat graph), keeping what the grade saw for each question
(its hits, idf, the closest sentence's similarity) and whether the question is answerable.
``cv``: the grade recomputed from those records for a grid of thresholds and checked kinds;
per language (each set is one language, and each language's figures depend only on its own
thresholds), k folds over its questions (stratified by answerability); each fold's choice is
the best balanced accuracy on the other folds (less any shortfall from the answer rate the
issue asks for; ``cv-balanced``: balanced accuracy alone), scored on the fold. Prints the chosen thresholds and the
spread of the held-out figures across folds.

    python scripts/grade_cv.py record ../shared/eval/squad_notre_dame.json /tmp/squad.pkl
    python scripts/grade_cv.py cv /tmp/squad.pkl /tmp/cmrc.pkl           # answer-rate shortfall penalised
    python scripts/grade_cv.py cv-balanced /tmp/squad.pkl /tmp/cmrc.pkl  # balanced accuracy alone
"""

from __future__ import annotations

import pickle
import random
import statistics
import sys
import tempfile
from itertools import product

from ragkit.config import Settings


def record(path: str, out: str) -> None:
    """Ask every question of the ``--unanswerable`` setup, keeping the grade's inputs."""
    from ragkit.answering import grading
    from ragkit_dev.eval import EvalBase, articles_of, read_squad, unanswerable_split

    passages, questions = read_squad(path)
    questions = [q for q in questions if q.question.strip()]
    kept = unanswerable_split(articles_of(path))
    seen: list[dict] = []
    original = grading.grade_offline

    def grade_offline(question, hits, idf, embed, settings, about=(), topic=frozenset()):
        from ragkit.answering.grading import PASSAGES_GRADED, closest_sentence, without_topic
        similarity, _ = closest_sentence(question, hits[:PASSAGES_GRADED], embed, topic)
        seen.append({"question": question, "hits": list(hits), "idf": dict(idf), "similarity": similarity,
                     "whole": without_topic(question, topic) == question})
        return original(question, hits, idf, embed, settings, about, topic)

    grading.grade_offline = grade_offline  # what grading.grade_evidence calls
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-cv-") as tmp:
        base = EvalBase(Settings(), tmp)
        base.ingest(passages, sorted(kept), lambda *a: None)
        engine = base.engine()
        for number, item in enumerate(questions):
            seen.clear()
            turn = engine.ask(f"u{number}", item.question)
            rows.append({"answerable": item.passage_index in kept, "found": turn.found, "rounds": list(seen)})
        base.kb.close()
    with open(out, "wb") as handle:
        pickle.dump({"dataset": path, "rows": rows}, handle)
    print(f"{len(rows)} questions recorded to {out}")


def decide(rounds: list[dict], choice: dict, cache: dict) -> bool:
    """Whether any round's grade is sufficient under ``choice`` (thresholds and gated kinds)."""
    from ragkit.answering import grading

    for graded in rounds:
        key = id(graded)
        if key not in cache:
            cache[key] = grading.grade_parts(graded["question"], graded["hits"], graded["idf"])
        chosen = choice["settings"]
        needed = chosen.grade_similarity_threshold_whole if graded.get("whole") else chosen.grade_similarity_threshold
        if grading.grade_from_parts(cache[key], graded["similarity"], "", chosen, needed).sufficient:
            return True
    return False


def rates(rows: list[dict], choice: dict, cache: dict) -> tuple[float, float, float]:
    """Answer rate, abstain rate and balanced accuracy of ``rows`` under ``choice``."""
    answerable = [row for row in rows if row["answerable"]]
    other = [row for row in rows if not row["answerable"]]
    answered = sum(decide(row["rounds"], choice, cache) for row in answerable) / max(len(answerable), 1)
    abstained = sum(not decide(row["rounds"], choice, cache) for row in other) / max(len(other), 1)
    return answered, abstained, (answered + abstained) / 2


D, N, P, L = "date", "number", "person", "place"
GATINGS = [(), (D, N), (D, N, P), (D, N, L), (D, N, P, L)]
GRIDS = {
    "en": {"grade_threshold_latin": [round(0.44 + 0.02 * i, 2) for i in range(10)],
           "grade_similarity_threshold": [round(0.56 + 0.015 * i, 3) for i in range(8)]},
    "zh": {"grade_threshold_cjk": [round(0.36 + 0.02 * i, 2) for i in range(10)]},
}
TARGET_ANSWER = {"en": 0.90, "zh": 0.95}


def choices(lang: str) -> list[dict]:
    """Every combination of the language's thresholds and gated kinds."""
    base = Settings(_env_file=None)
    grid = GRIDS[lang]
    found = []
    for gated in GATINGS:
        for values in product(*grid.values()):
            update = dict(zip(grid, values))
            kinds = {"grade_kinds_latin" if lang == "en" else "grade_kinds_cjk": gated}
            found.append({"gated": gated, "update": update, "settings": base.model_copy(update=update | kinds)})
    return found


def describe(choice: dict) -> str:
    return f"{choice['update']} gated {'/'.join(choice['gated']) or 'none'}"


def cv(paths: list[str], folds: int = 5, seed: int = 2026, penalised: bool = True) -> None:
    """K-fold cross-validation of the grade's thresholds and gated kinds, per language (each
    language's figures depend only on its own thresholds): each fold's choice is the best
    balanced accuracy on the other folds, less any shortfall of the answer rate below target
    (``penalised``; without it, balanced accuracy alone)."""
    cache: dict = {}
    for path in paths:
        with open(path, "rb") as handle:
            data = pickle.load(handle)
        lang = "zh" if "cmrc" in data["dataset"] else "en"
        rows = data["rows"]
        fold_of = {}
        for label in (True, False):
            members = [i for i, row in enumerate(rows) if row["answerable"] is label]
            random.Random(seed).shuffle(members)
            fold_of.update({index: position % folds for position, index in enumerate(members)})
        options = choices(lang)
        held, chosen = [], []
        for fold in range(folds):
            train = [row for i, row in enumerate(rows) if fold_of[i] != fold]
            test = [row for i, row in enumerate(rows) if fold_of[i] == fold]

            def objective(choice):
                answered, _, balanced = rates(train, choice, cache)
                return balanced - penalised * max(0.0, TARGET_ANSWER[lang] - answered)

            best = max(options, key=objective)
            chosen.append(best)
            held.append(rates(test, best, cache))
            print(f"{lang} fold {fold + 1}: {describe(best)}; held out answered {held[-1][0]:.3f} "
                  f"abstained {held[-1][1]:.3f} balanced {held[-1][2]:.3f}")
        balanced = [c for _, _, c in held]
        answered = [a for a, _, _ in held]
        print(f"{lang}: held-out balanced mean {statistics.mean(balanced):.4f} (min {min(balanced):.4f}, "
              f"max {max(balanced):.4f}, sd {statistics.pstdev(balanced):.4f}); answered mean "
              f"{statistics.mean(answered):.4f} (min {min(answered):.4f}, max {max(answered):.4f})")
        whole = max(options, key=lambda choice: (lambda r: r[2] - penalised * max(0.0, TARGET_ANSWER[lang] - r[0]))(
            rates(rows, choice, cache)))
        print(f"{lang} whole-set choice: {describe(whole)} -> {rates(rows, whole, cache)}")
        for gated in GATINGS:
            kinds = {"grade_kinds_latin" if lang == "en" else "grade_kinds_cjk": gated}
            current = {"gated": gated, "update": {}, "settings": Settings(_env_file=None).model_copy(update=kinds)}
            print(f"{lang} current thresholds, {describe(current)}: {rates(rows, current, cache)}")


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "cv-balanced":
        cv(sys.argv[2:], penalised=False)
    else:
        cv(sys.argv[2:])
