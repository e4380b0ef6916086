"""Replay the offline answerer on recorded inputs: variants scored in seconds, not minutes.

``record``: the ``eval --answers`` setup of a shared set (every passage indexed, every question
asked through the chat graph), keeping what ``extractive_answer`` was given for each question (the
question, its hits, idf, the follow-up as asked) and the final answer. ``score``: the answerer
replayed on those records with the current code (``--off FIELD`` turns a rule of the language's
``Weights`` off), against the recorded answers: answer_contains and mean characters, then the
held-out gain over split halves by passage (seeds x 2 halves), and which questions it gained or
lost. A replay equals the eval only while the answerer reads nothing else (no sentence vectors:
the Chinese weights' ``semantic`` is 0).

    python scripts/answer_replay.py record ../shared/eval/cmrc2018_trial.json /tmp/cmrc.pkl
    python scripts/answer_replay.py score /tmp/cmrc.pkl --off announcement_chars
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import pickle
import random
import statistics
import tempfile

from ragkit.config import Settings


def record(path: str, out: str) -> None:
    """Ask every question of the ``--answers`` setup, keeping the answerer's inputs."""
    import ragkit.graph.answering as answering
    from ragkit.errors import QuestionError
    from ragkit.eval import EvalBase, read_squad

    passages, questions = read_squad(path)
    seen: list[dict] = []
    original = answering.extractive_answer

    def spy(question, hits, settings, embed=None, idf=None, asked=None):
        answer = original(question, hits, settings, embed, idf, asked)
        seen.append({"question": question, "hits": copy.deepcopy(hits), "idf": idf, "asked": asked})
        return answer

    answering.extractive_answer = spy
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragkit-replay-") as tmp:
        base = EvalBase(Settings(), tmp)
        base.ingest(passages, list(range(len(passages))), lambda *_: None)
        engine = base.engine(always_answer=True)
        for number, item in enumerate(questions):
            before = len(seen)
            try:
                final = engine.ask(f"r{number}", item.question).answer
            except QuestionError:
                final = ""
            rows.append({"item": item, "final": final, "inputs": seen[-1] if len(seen) > before else None})
        base.kb.close()
    with open(out, "wb") as handle:
        pickle.dump(rows, handle)
    print(f"recorded {len(rows)} questions; answer_contains {_contains(rows, [r['final'] for r in rows]):.4f}")


def replay(rows: list[dict], off: list[str]) -> list[str]:
    """Each question's answer by the current answerer, with the named rules off."""
    import ragkit.extractive as extractive

    saved = extractive.CJK_WEIGHTS, extractive.LATIN_WEIGHTS
    defaults = {f.name: f.default for f in dataclasses.fields(extractive.Weights)}
    try:
        for name in ("CJK_WEIGHTS", "LATIN_WEIGHTS"):
            setattr(extractive, name, dataclasses.replace(getattr(extractive, name), **{f: defaults[f] for f in off}))
        settings = Settings()
        return [row["final"] if row["inputs"] is None else
                extractive.extractive_answer(row["inputs"]["question"], row["inputs"]["hits"], settings, None,
                                             row["inputs"]["idf"], asked=row["inputs"]["asked"]).text
                for row in rows]
    finally:
        extractive.CJK_WEIGHTS, extractive.LATIN_WEIGHTS = saved


def _found(rows: list[dict], answers: list[str]) -> list[bool]:
    return [any(gold in answer for gold in row["item"].answers) for row, answer in zip(rows, answers)]


def _contains(rows: list[dict], answers: list[str]) -> float:
    return sum(_found(rows, answers)) / max(len(rows), 1)


def held_out_gains(rows: list[dict], before: list[bool], after: list[bool], seeds: int) -> list[float]:
    """The gain in answer_contains on each half of ``seeds`` random halvings by passage."""
    passages = sorted({row["item"].passage_index for row in rows})
    gains = []
    for seed in range(1, seeds + 1):
        order = passages[:]
        random.Random(seed).shuffle(order)
        first = set(order[: len(order) // 2])
        for side in (True, False):
            held = [i for i, row in enumerate(rows) if (row["item"].passage_index in first) == side]
            gains.append((sum(after[i] for i in held) - sum(before[i] for i in held)) / len(held))
    return gains


def score(records: str, off: list[str], seeds: int) -> None:
    """Print the replayed figures against the recorded answers."""
    with open(records, "rb") as handle:
        rows = pickle.load(handle)
    recorded = [row["final"] for row in rows]
    replayed = replay(rows, off)
    before, after = _found(rows, recorded), _found(rows, replayed)
    gains = held_out_gains(rows, before, after, seeds)
    print(f"recorded answer_contains {_contains(rows, recorded):.4f} at {statistics.fmean(map(len, recorded)):.1f} "
          f"chars; replayed {_contains(rows, replayed):.4f} at {statistics.fmean(map(len, replayed)):.1f}")
    print(f"held-out gain ({seeds} seeds x 2 halves by passage): min {min(gains):+.4f} max {max(gains):+.4f}")
    for row, was, now, answer in zip(rows, before, after, replayed):
        if was != now:
            print(("gained" if now else "lost"), row["item"].question, "|", answer[:120])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record")
    recording.add_argument("path")
    recording.add_argument("out")
    scoring = commands.add_parser("score")
    scoring.add_argument("records")
    scoring.add_argument("--off", action="append", default=[], help="a Weights field set to its default (off)")
    scoring.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    if args.command == "record":
        record(args.path, args.out)
    else:
        score(args.records, args.off, args.seeds)


if __name__ == "__main__":
    main()
