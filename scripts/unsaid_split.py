"""How often ``answer_fit.unsaid_asked`` withholds an answer, on the shared sets: each
answerable question against its own paragraph (gold: should rarely reject) and against
another paragraph of the same article that lacks the answer, or of another article where the
article has one (wrong: should mostly reject).

    python scripts/unsaid_split.py ../shared/eval/squad_notre_dame.json ../shared/eval/cmrc2018_trial.json
"""

from __future__ import annotations

import random
import sys

from ragkit.answering.answer_fit import unsaid_asked
from ragkit_dev.eval import articles_of, read_squad


def split(path: str, seed: int = 2026) -> tuple[float, float, int]:
    """Rejected shares (gold paragraph, wrong paragraph) and the number of questions."""
    passages, questions = read_squad(path)
    article_of = {index: members for members in articles_of(path) for index in members}
    rng = random.Random(seed)
    gold = wrong = count = 0
    for item in questions:
        if not item.question.strip() or not item.answers:
            continue
        others = [i for i in article_of[item.passage_index]
                  if i != item.passage_index and not any(answer in passages[i] for answer in item.answers)]
        if not others:  # a one-paragraph article: another article's paragraph
            others = [rng.randrange(len(passages))]
            if others[0] == item.passage_index:
                continue
        count += 1
        gold += bool(unsaid_asked("", passages[item.passage_index], item.question))
        wrong += bool(unsaid_asked("", passages[rng.choice(others)], item.question))
    return gold / count, wrong / count, count


if __name__ == "__main__":
    for path in sys.argv[1:]:
        gold, wrong, count = split(path)
        print(f"{path}: {count} questions; withheld against the gold paragraph {gold:.3f}, "
              f"against another paragraph of the article {wrong:.3f}")
