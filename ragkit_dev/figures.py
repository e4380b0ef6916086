"""Figures of quality and speed, generated, never typed by hand.

    python -m ragkit_dev.figures                # render docs/figures.md from docs/figures/*.json
    python -m ragkit_dev.figures --run          # measure the whole grid again first (heavy)
    python -m ragkit_dev.figures --run --only squad_notre_dame-answers --only bench-quick
    python -m ragkit_dev.figures --run --shared /path/to/shared/eval

``--run`` measures every run of :data:`GRID` through the same library functions, with the
same arguments, as the command line does (``python -m ragkit eval FILE ... --json`` through
``ragkit_dev.eval``, ``python -m ragkit bench --quick --json`` through ``ragkit_dev.bench``),
and saves each result as one JSON file, ``docs/figures/<run>.json``: the summary the command
prints as JSON, with the command it stands for, the date, the git commit and the machine's core
count and load. A run that fails leaves its earlier file as it was. Rendering (always) reads
the JSON files present and writes ``docs/figures.md``: one table per kind of figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO.parent / "shared" / "eval"
DEFAULT_DOCS = REPO / "docs"
COMMAND = "python -m ragkit_dev.figures"
NOT_MEASURED = "—"


@dataclass(frozen=True)
class Run:
    """One command of the grid: what it measures and how the command line spells it."""

    name: str  # the JSON file's stem
    kind: str  # retrieval | answers | unanswerable | dialogues | multihop | bench
    dataset: str | None = None  # a file of the shared eval directory
    dialogues: str | None = None
    mode: str | None = None  # --mode; None: the configured answer mode, as the CLI without --mode

    def command(self, shared: str = "../shared/eval") -> str:
        """The command line this run stands for."""
        if self.kind == "bench":
            return "python -m ragkit bench --quick --json"
        words = ["python -m ragkit eval", f"{shared}/{self.dataset}"]
        words += {"answers": ["--answers"], "unanswerable": ["--unanswerable"], "multihop": ["--multihop"],
                  "dialogues": ["--dialogues", f"{shared}/{self.dialogues}"]}.get(self.kind, [])
        if self.mode:
            words += ["--mode", self.mode]
        return " ".join(words + ["--json"])


def _qa_runs(stem: str) -> list[Run]:
    dataset = f"{stem}.json"
    return [Run(stem, "retrieval", dataset), Run(f"{stem}-answers", "answers", dataset),
            Run(f"{stem}-unanswerable", "unanswerable", dataset),
            Run(f"{stem}-dialogues", "dialogues", dataset, dialogues=f"dialogues_{dataset}")]


GRID: tuple[Run, ...] = (
    *_qa_runs("squad_notre_dame"),
    *_qa_runs("cmrc2018_trial"),
    Run("multihop_synthetic-default", "multihop", "multihop_synthetic.json", mode="default"),
    Run("multihop_synthetic-agentic", "multihop", "multihop_synthetic.json", mode="agentic"),
    Run("squad2_dev8", "retrieval", "squad2_dev8.json"),
    Run("squad2_dev8-answers", "answers", "squad2_dev8.json"),
    Run("bench-quick", "bench"),
)
RUNS = {run.name: run for run in GRID}


# --- measuring -------------------------------------------------------------------------------------------------


def measure(run: Run, shared: Path, progress: Callable[[str, int, int], None] | None = None,
            report: Callable[[str], None] | None = None) -> dict:
    """The summary of one run, as ``cmd_eval`` / ``cmd_bench`` of ``ragkit/cli.py`` compute it."""
    from ragkit.config import load_settings

    if run.kind == "bench":
        from ragkit_dev.bench import run_bench

        return run_bench(load_settings(), quick=True, report=report)
    from ragkit_dev.eval import run_dialogues, run_eval, run_multihop, run_unanswerable

    settings = load_settings(**({"chat_mode": run.mode} if run.mode else {}))
    path = shared / run.dataset
    if run.kind == "multihop":
        return run_multihop(path, settings, progress=progress)
    if run.kind == "unanswerable":
        return run_unanswerable(path, settings, progress=progress)
    if run.kind == "dialogues":
        return run_dialogues(path, shared / run.dialogues, settings, progress=progress)
    return run_eval(path, settings, with_answers=run.kind == "answers", progress=progress)


def machine() -> dict:
    """Where and on what the figures were measured."""
    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": git("rev-parse", "HEAD"),
            "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
            "cores": os.cpu_count(), "load_average": round(os.getloadavg()[0], 2)}


def save_result(directory: Path, run: Run, summary: dict, seconds: float, shared: str = "../shared/eval",
                recorded: dict | None = None) -> Path:
    """Write one run's result as ``<directory>/<run>.json`` (``recorded``: the date, commit,
    cores and load of :func:`machine`, measured now when not given)."""
    directory.mkdir(parents=True, exist_ok=True)
    record = {"run": run.name, "kind": run.kind, "command": run.command(shared), **(recorded or machine()),
              "seconds": round(seconds, 1), "summary": summary}
    path = directory / f"{run.name}.json"
    path.write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def run_grid(runs: Iterable[Run], shared: Path, results: Path, say: Callable[[str], None]) -> list[str]:
    """Measure the runs one after the other, saving each as it ends; the names of those that failed."""
    from tqdm import tqdm

    runs = list(runs)
    failed = []
    for number, run in enumerate(runs, start=1):
        say(f"[{number}/{len(runs)}] {run.command(str(shared))}")
        bars: dict[str, tqdm] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in bars:
                bars[stage] = tqdm(total=total, desc=stage, unit="item", file=sys.stderr, leave=False)
            bars[stage].update(1)

        started_at = machine()
        started = time.perf_counter()
        try:
            summary = measure(run, shared, progress=progress, report=lambda stage: say(f"  {stage}…"))
        except Exception as exc:  # noqa: BLE001 - one failed run must not cost the others
            say(f"  failed: {type(exc).__name__}: {exc}")
            failed.append(run.name)
            continue
        finally:
            for bar in bars.values():
                bar.close()
        say(f"  saved {save_result(results, run, summary, time.perf_counter() - started, str(shared), started_at)}")
    return failed


# --- rendering -------------------------------------------------------------------------------------------------


def load_results(directory: Path) -> list[dict]:
    """The results saved in ``directory``, in the grid's order (others after, by name)."""
    records = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        record = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(record, dict) and isinstance(record.get("summary"), dict):
            records.append(record)
    order = {run.name: index for index, run in enumerate(GRID)}
    return sorted(records, key=lambda r: (order.get(r.get("run"), len(order)), str(r.get("run"))))


def cell(value) -> str:
    """One table cell: a number as measured, yes/no, or a dash for a figure not measured."""
    if value is None or value == "":
        return NOT_MEASURED
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return "; ".join(cell(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]


def _label(record: dict) -> str:
    summary = record["summary"]
    return str(summary.get("dataset") or record.get("run"))


def _of(records: list[dict], kind: str) -> list[dict]:
    return [record for record in records if record.get("kind") == kind]


def _section(title: str, note: str, header: list[str], rows: list[list]) -> list[str]:
    return ["", f"## {title}", "", note, "", *table(header, rows)] if rows else []


def _lang(summary: dict, key: str) -> str:
    parts = [f"{lang} {cell(summary[lang].get(key))}" for lang in ("en", "zh") if isinstance(summary.get(lang), dict)]
    return ", ".join(parts) or NOT_MEASURED


BENCH_LABELS = {
    "workload": "workload",
    "model_load_s": "loading the embedding model (s)",
    "ingest_vs_encode_large": "ingest throughput over plain PyTorch encoding, large files",
    "ingest_vs_encode_small": "ingest throughput over plain PyTorch encoding, one-passage files",
    "onnx_int8_speedup_passages": "`onnx-int8` encoding rate over `torch`'s, passages",
    "onnx_int8_speedup_questions": "`onnx-int8` encoding rate over `torch`'s, questions one at a time",
    "onnx_int8_over_pytorch_passages": "`onnx-int8` encoding rate over plain PyTorch, passages",
    "extractive_answer_ms": "offline answer, whole turn, median (ms)",
    "extractive_answer_p95_ms": "offline answer, whole turn, p95 (ms)",
    "first_token_ms": "first streamed token from a local OpenAI-compatible server (ms)",
    "load_answer_p50_ms": "chat sessions asking while a file is indexed: answer p50 (ms)",
    "load_answer_p95_ms": "chat sessions asking while a file is indexed: answer p95 (ms)",
    "load_lost": "turns, documents or vectors lost under that load",
    "ocr_engine_load_s": "loading the OCR engine once (s)",
    "ocr_page_s": "OCR of one scanned A4 page (s)",
    "ocr_imported_without_scans": "a process that reads no scan imports the OCR engine",
    "url_fetch_extract_ms": "a web page from a local server: fetch and main-text extraction (ms)",
    "url_ingest_s": "the same page's whole `ingest_url` (s)",
}


BASE_LABELS = (  # figures measured on each synthetic base, the key ending in the base's size
    ("search_filtered_p50_ms_", "search p50 at {} passages, with a tag filter (ms)"),
    ("search_filtered_p95_ms_", "search p95 at {} passages, with a tag filter (ms)"),
    ("search_p50_ms_", "search p50 at {} passages (ms)"),
    ("search_p95_ms_", "search p95 at {} passages (ms)"),
    ("add_one_doc_s_", "adding one 5-passage file to the {} base until searchable (s)"),
    ("add_one_doc_found_", "that file found by the next search ({} base)"),
    ("reopen_s_", "a new process opening the {} base until its first answered search (s)"),
    ("peak_rss_mb_", "peak memory of that process ({} base, MB)"),
)


def bench_label(key: str) -> str:
    """A bench key in words (the key itself, in code, when it has none)."""
    if key in BENCH_LABELS:
        return BENCH_LABELS[key]
    for prefix, label in BASE_LABELS:
        if key.startswith(prefix):
            return label.format(key[len(prefix):])
    return f"`{key}`"


def render(records: list[dict]) -> str:
    """``docs/figures.md`` from the saved results."""
    lines = ["# Figures", "",
             f"<!-- Generated by `{COMMAND}` from docs/figures/*.json: do not edit by hand. -->", "",
             f"Generated by `{COMMAND}` from the JSON results in `docs/figures/`; "
             f"`{COMMAND} --run` measures them again (the eval grid and the quick bench, one JSON file per run). "
             "Do not edit this file by hand: every figure here comes from a saved run, and the table of runs "
             "says when, on which commit and on how many cores each was measured. What each eval measures: "
             "[development.md](development.md#measuring-quality-and-speed)."]
    if not records:
        return "\n".join(lines + ["", f"No figures recorded yet; run `{COMMAND} --run`.", ""])

    runs = [[f"`{r.get('run')}`", f"`{r.get('command', '')}`", str(r.get("date", ""))[:16].replace("T", " "),
             str(r.get("commit", ""))[:10] + (" (uncommitted changes)" if r.get("uncommitted_changes") else ""),
             r.get("cores"), r.get("load_average"), r.get("seconds")] for r in records]
    lines += _section("Runs", "Each result's command, when it ran (UTC), the commit, the machine's cores, its "
                      "load average when the run started, and how long the run took.",
                      ["run", "command", "date", "commit", "cores", "load", "seconds"], runs)

    retrieval = [[_label(r), r["summary"].get("questions"), r["summary"].get("hit_at_1"), r["summary"].get("hit_at_5"),
                  r["summary"].get("hit_at_10"), r["summary"].get("mrr_at_10"), r["summary"].get("search_p50_ms")]
                 for r in _of(records, "retrieval")]
    lines += _section("Retrieval", "`python -m ragkit eval FILE --json`: a hit at k means a passage of the "
                      "question's document is among the first k results.",
                      ["set", "questions", "hit@1", "hit@5", "hit@10", "MRR@10", "search p50 ms"], retrieval)

    answers = [[_label(r), r["summary"].get("questions"), r["summary"].get("answer_contains"),
                r["summary"].get("answer_chars_mean"), r["summary"].get("answer_p50_ms")]
               for r in _of(records, "answers")]
    lines += _section("Answers", "`--answers`: every question asked through the chat graph in a new conversation "
                      "and answered even where the grade calls the evidence weak; *contains*: the share of answers "
                      "holding a gold answer.",
                      ["set", "questions", "answer contains", "mean characters", "answer p50 ms"], answers)

    unanswerable = [[_label(r), r["summary"].get("answerable"), r["summary"].get("unanswerable"),
                     r["summary"].get("answer_rate_answerable"), r["summary"].get("abstain_rate_unanswerable"),
                     r["summary"].get("abstain_balanced"), r["summary"].get("answer_contains")]
                    for r in _of(records, "unanswerable")]
    lines += _section("Saying \"not found\"", "`--unanswerable`: half the articles indexed, every question asked; "
                      "*answered*: the share of answerable questions answered, *not found*: the share of the others "
                      "answered \"not found\", *balanced*: their mean.",
                      ["set", "answerable", "unanswerable", "answered", "not found", "balanced", "answer contains"],
                      unanswerable)

    dialogues = [[_label(r), r["summary"].get("dialogues"), r["summary"].get("follow_up_hit_at_5"),
                  r["summary"].get("switch_hit_at_5"), r["summary"].get("standalone_hit_at_5"),
                  r["summary"].get("rewrite_ms_p50")] for r in _of(records, "dialogues")]
    lines += _section("Follow-ups", "`--dialogues FILE`: two-turn dialogues; is the second turn's passage in the "
                      "top 5 when asked as a follow-up, after a topic switch, and asked alone?",
                      ["dialogues file", "dialogues", "follow-up hit@5", "topic switch hit@5", "asked alone hit@5",
                       "rewrite p50 ms"], dialogues)

    multihop = [[_label(r), r["summary"].get("mode"), r["summary"].get("questions"),
                 r["summary"].get("evidence_all_found"), _lang(r["summary"], "evidence_all_found"),
                 r["summary"].get("evidence_recall"), r["summary"].get("evidence_passages_mean"),
                 r["summary"].get("answer_contains"), r["summary"].get("comparison_correct"),
                 r["summary"].get("rounds_mean"), r["summary"].get("latency_p50_ms")]
                for r in _of(records, "multihop")]
    lines += _section("Multi-hop", "`--multihop [--mode default|agentic]`: *all found*: the share of questions whose "
                      "every gold document is among the answer's sources; *answer contains*: bridge questions; "
                      "*comparisons*: comparison questions decided right.",
                      ["set", "mode", "questions", "evidence all found", "by language", "evidence recall",
                       "passages", "answer contains", "comparisons", "rounds", "latency p50 ms"], multihop)

    for record in _of(records, "bench"):
        summary = record["summary"]
        rows = [[bench_label(key), value] for key, value in summary.items()]
        lines += _section(f"Speed and memory (`{record.get('run')}`)",
                          "`python -m ragkit bench --quick --json`: a smoke-sized workload (the full bench is "
                          "`python -m ragkit bench --json`); what each key measures is in `ragkit_dev/bench.py`.",
                          ["figure", "value"], rows)
    return "\n".join(lines) + "\n"


def write_markdown(results: Path, out: Path) -> Path:
    """Render ``out`` from the results in ``results``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(load_results(results)), encoding="utf-8")
    return out


def _shared_dir(given: str) -> Path:
    """The directory holding the eval files (``DIR`` itself, or ``DIR/eval``)."""
    path = Path(given)
    return path / "eval" if not (path / "squad_notre_dame.json").exists() and (path / "eval").is_dir() else path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Render docs/figures.md from the saved results; "
                                     "with --run, measure the eval grid and the quick bench first.")
    parser.add_argument("--run", action="store_true",
                        help="measure the runs again (heavy: every eval of the grid and the quick bench)")
    parser.add_argument("--only", action="append", choices=list(RUNS), metavar="RUN",
                        help=f"with --run: only this run (repeatable): {', '.join(RUNS)}")
    parser.add_argument("--shared", default=str(DEFAULT_SHARED), metavar="DIR",
                        help="the shared eval data (default: ../shared/eval from the repository root)")
    parser.add_argument("--docs", default=str(DEFAULT_DOCS), metavar="DIR",
                        help="where figures/*.json and figures.md go (default: docs/)")
    args = parser.parse_args(argv)
    docs = Path(args.docs)
    results = docs / "figures"
    say = lambda text: print(f"figures: {text}", file=sys.stderr, flush=True)  # noqa: E731
    failed: list[str] = []
    if args.run:
        shared = _shared_dir(args.shared)
        runs = [RUNS[name] for name in args.only] if args.only else list(GRID)
        missing = sorted({str(shared / name) for run in runs for name in (run.dataset, run.dialogues)
                          if name and not (shared / name).is_file()})
        if missing:
            print(f"error: eval data not found: {', '.join(missing)} (give its folder with --shared DIR)",
                  file=sys.stderr)
            return 2
        failed = run_grid(runs, shared, results, say)
    say(f"wrote {write_markdown(results, docs / 'figures.md')}")
    if failed:
        print(f"error: these runs failed (their earlier results, if any, are kept): {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
