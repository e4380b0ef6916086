"""Command line: ``python -m ragkit ingest|docs|search|delete|tag|kb|reindex|ask|sessions|eval|bench``.

Every command exits 0 on success and non-zero with a one-line reason on failure. Every
text that comes from a file, a document, a model or the user (names, titles, passages,
answers, messages) is printed through :func:`ragkit.app.render.terminal_safe`: control
characters show as visible codes, so a file name cannot clear the screen or forge a line.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import ragkit
from ragkit import CatalogError, QuestionError, RagkitError, SearchFilters, SessionError, UsageError, load_settings
from ragkit.app import collect_files, plural, section_trail, terminal_json, terminal_json_text, terminal_safe

MAX_RESULTS = 1000
"""Most passages ``search -k`` returns: more is a full scan of the store, not a search."""


MODEL_FELL_BACK = 3  # ask: the configured model failed and the answer shown is the offline one


class Parser(argparse.ArgumentParser):
    """argparse that takes no abbreviation of an option (``--mode`` is refused, never read
    as ``--model``); its subcommands' parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _kb(args):
    kb = ragkit.KnowledgeBase(load_settings(**_overrides(args)))
    for note in kb.health:
        print(f"warning: {terminal_safe(note)}", file=sys.stderr)
    return kb


def _overrides(args) -> dict:
    return {"data_dir": Path(args.data_dir)} if getattr(args, "data_dir", None) else {}


def _is_url(text: str) -> bool:
    return text.lower().startswith(("http://", "https://"))


def _kb_ids(kb, args) -> list[str] | None:
    """The ids of the knowledge bases named with --kb (None when none is named)."""
    names = getattr(args, "kb", None) or []
    return [kb.knowledge_base(name).id for name in names] or None


def cmd_ingest(args) -> int:
    """Add files, directories and web pages (http/https addresses), with a progress bar for
    many files (links inside a folder are skipped and listed, see ``ragkit.ingest.folders``)."""
    from tqdm import tqdm

    urls = [path for path in args.paths if _is_url(path)]
    paths = [path for path in args.paths if not _is_url(path)]
    selection = collect_files(paths) if paths else None
    for skipped in selection.skipped if selection else []:
        if args.json:
            print(terminal_json({"filename": str(skipped.path), "status": "skipped", "message": skipped.message}))
        else:
            print(f"- {'skipped':<11} {terminal_safe(skipped.message)}")
    files = selection.files if selection else []
    if not files and not urls:
        raise UsageError("no supported files found in " + ", ".join(args.paths))

    kb = _kb(args)
    kb_id = kb.knowledge_base(args.kb).id if args.kb else ""
    tags = args.tags.split(",") if args.tags else []
    total = len(files) + len(urls)
    with tqdm(total=total, unit="file", disable=total < 2 or args.json, file=sys.stderr) as bar:
        def finished(stage: str, fraction: float) -> None:
            if stage == "done":
                bar.update(1)

        items = [ragkit.IngestItem.of(path, tags=tags, progress=finished, kb_id=kb_id) for path in files]
        items += [ragkit.IngestItem.of_url(url, tags, finished, kb_id) for url in urls]
        results = kb.ingest_many(items)
    for result in results:
        if args.json:
            print(terminal_json(result.to_dict()))
        else:
            mark = {"added": "+", "new_version": "~", "unchanged": "=", "refused": "!"}[result.status]
            doc = f" [{result.document.id}]" if result.document else ""
            print(f"{mark} {result.status:<11} {terminal_safe(result.message)}{doc}")
    refused = [r for r in results if not r.ok]
    if refused:
        raise UsageError(f"{len(refused)} of {len(results)} files refused")
    return 0


def cmd_docs(args) -> int:
    """List the documents (of the knowledge bases named with --kb, else of all)."""
    kb = _kb(args)
    documents = kb.documents(_kb_ids(kb, args))
    if args.json:
        print(terminal_json([d.to_dict() for d in documents]))
        return 0
    if not documents:
        print("no documents yet: python -m ragkit ingest FILE...")
        return 0
    from datetime import datetime

    names = {base.id: base.name for base in kb.knowledge_bases()}
    header = (f"{'id':<12}  {'title':<32} {'type':<8} {'pages':>5} {'chunks':>6}  {'tags':<16} {'ver':>3}  "
              f"{'added':<16}  knowledge base")
    print(header)
    for d in documents:
        added = datetime.fromtimestamp(d.created_at).strftime("%Y-%m-%d %H:%M")
        tags = _clip(terminal_safe(",".join(d.tags)), 16)
        title = _clip(terminal_safe(d.title), 32)
        print(f"{d.id:<12}  {title:<32} {d.doc_type:<8} {d.pages:>5} {d.chunks:>6}  "
              f"{tags:<16} {d.version:>3}  {added:<16}  {terminal_safe(names.get(d.kb_id, d.kb_id))}")
    advice = kb.reindex_advice()
    if advice:
        print(f"note: {advice}", file=sys.stderr)
    return 0


def cmd_kb(args) -> int:
    """List, create, rename or delete knowledge bases."""
    kb = _kb(args)
    if args.action in (None, "list"):
        bases = kb.knowledge_bases()
        if args.json:
            print(terminal_json([base.to_dict() for base in bases]))
            return 0
        for base in bases:
            default = "  (default for ingest)" if base.id == kb.default_knowledge_base().id else ""
            print(f"{base.id:<10} {base.documents:>5} documents  {terminal_safe(base.name)}{default}")
    elif args.action == "create":
        base = kb.create_knowledge_base(_need(args.name, "a name"))
        print(f"created knowledge base {terminal_safe(base.name)} ({base.id})")
    elif args.action == "rename":
        base = kb.rename_knowledge_base(_need(args.name, "the knowledge base to rename"), _need(args.new_name,
                                                                                               "a new name"))
        print(f"{base.id}: {terminal_safe(base.name)}")
    elif args.action == "delete":
        deleted = kb.delete_knowledge_base(_need(args.name, "the knowledge base to delete"))

        print(f"deleted knowledge base {terminal_safe(args.name)} and {plural(len(deleted), 'document')}")
    return 0


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _filters(args):
    return SearchFilters(
        doc_ids=args.doc or None,
        tags=args.tag or None,
        doc_types=args.type or None,
    )


def _search_filters(kb, args):
    """The command's filters, within the knowledge bases named with --kb."""
    filters = _filters(args)
    filters.knowledge_bases = _kb_ids(kb, args)
    return filters


def cmd_search(args) -> int:
    """Print the ranked passages for a query."""
    kb = _kb(args)
    hits = kb.search(args.query, k=args.k, filters=_search_filters(kb, args))
    if args.json:
        print(terminal_json([h.to_dict() for h in hits]))
        return 0
    if not hits:
        print("no results" + ("" if any(c.isalnum() for c in args.query) else " (the query has no searchable words)"))
        return 0
    for rank, hit in enumerate(hits, start=1):
        dense = f"{hit.dense_score:.3f}" if hit.dense_score is not None else "-"
        lexical = f"{hit.lexical_score:.2f}" if hit.lexical_score is not None else "-"
        print(f"{rank}. {terminal_safe(hit.title)} ({terminal_safe(hit.filename)}, p.{hit.page})  "
              f"score {hit.score:.3f}  dense {dense}  bm25 {lexical}")
        if hit.section:
            print("   " + terminal_safe(section_trail(hit.section)))
        print("   " + terminal_safe(" ".join(hit.text.split())[:300]))
    return 0


def cmd_delete(args) -> int:
    """Delete documents by id."""
    kb = _kb(args)
    for doc_id in args.ids:
        try:
            record = kb.delete(doc_id)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        print(f"deleted {record.id} ({terminal_safe(record.filename)})")
    return 0


def cmd_tag(args) -> int:
    """Replace a document's tags and/or title."""
    kb = _kb(args)
    try:
        tags = args.tags.split(",") if args.tags is not None else None
        record = kb.update_metadata(args.id, tags=tags, title=args.title)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    print(f"{record.id}: title={terminal_safe(repr(record.title))} tags={terminal_safe(','.join(record.tags))}")
    return 0


def cmd_reindex(args) -> int:
    """Re-embed every passage with the configured embedding model."""
    kb = ragkit.KnowledgeBase(load_settings(**_overrides(args)), check_model=False)
    done = kb.reindex()
    print(f"re-embedded {done} passages with {kb.embedder.name}")
    return 0


def cmd_repair(args) -> int:
    """Rebuild what can be rebuilt after the catalog or the vector store was damaged."""
    settings = load_settings(**_overrides(args))
    try:
        kb = ragkit.KnowledgeBase.for_repair(settings)
    except CatalogError:
        if settings.database_url:  # a server database is not a file to move aside
            raise
        moved = ragkit.KnowledgeBase.set_catalog_aside(settings)
        print(f"set the unreadable catalog aside as {moved.name}")
        kb = ragkit.KnowledgeBase.for_repair(settings)
    for line in kb.repair().lines():
        print(terminal_safe(line))
    for note in kb.health:
        print(f"warning: {terminal_safe(note)}", file=sys.stderr)
    return 0


def cmd_eval(args) -> int:
    """Measure retrieval (and answer) quality on a SQuAD-format file."""
    from tqdm import tqdm

    from ragkit_dev.eval import run_dialogues, run_eval, run_identifiers, run_multihop, run_unanswerable

    if args.identifiers is not None and args.identifiers < 1:
        raise UsageError(f"--identifiers needs a positive number of passages, not {args.identifiers}")
    if args.support:
        from ragkit_dev.support_eval import run_support

        _print_summary(run_support(args.support + ([args.path] if args.path else []), limit=args.limit), args.json)
        return 0
    if not args.identifiers and not args.path:
        raise UsageError("name a SQuAD-format file to evaluate (or use --identifiers N)")
    if args.compare_modes and (args.mode or args.multihop or args.unanswerable or args.dialogues or args.identifiers):
        raise UsageError("--compare-modes asks a SQuAD-format file's questions in both modes: "
                           "use it with --answers only, without --mode")
    bars: dict[str, tqdm] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            bars[stage] = tqdm(total=total, desc=stage, unit="item", file=sys.stderr, leave=False)
        bars[stage].update(1)

    overrides = _overrides(args)
    if args.mode:
        overrides["chat_mode"] = args.mode
    settings = load_settings(**overrides)
    if args.multihop:
        summary = run_multihop(args.path, settings, limit=args.limit, progress=progress)
    elif args.identifiers:
        summary = run_identifiers(args.identifiers, settings, limit=args.limit, progress=progress)
    elif args.unanswerable:
        summary = run_unanswerable(args.path, settings, limit=args.limit, progress=progress)
    elif args.dialogues:
        summary = run_dialogues(args.path, args.dialogues, settings, limit=args.limit, progress=progress)
    else:
        summary = run_eval(args.path, settings, with_answers=args.answers or args.compare_modes, limit=args.limit,
                           compare_modes=args.compare_modes, progress=progress)
    for bar in bars.values():
        bar.close()
    width = max(len(key) for key in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    return 0


def _print_summary(summary: dict, as_json: bool) -> None:
    width = max(len(key) for key in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    if as_json:
        print(json.dumps(summary, ensure_ascii=False))


def cmd_bench(args) -> int:
    """Print speed and memory figures."""
    from ragkit_dev.bench import run_bench

    if args.peer:
        from ragkit_dev.peer import PeerBenchError, measure_peer

        print("bench: ragkit and the usual LangChain stack on the same files…", file=sys.stderr, flush=True)
        try:
            summary = measure_peer(questions_per_set=100 if args.quick else None,
                                   embedding_backend=load_settings().embedding_backend)
        except PeerBenchError as exc:
            raise UsageError(str(exc)) from None
        _print_summary(summary, args.json)
        return 0
    say = lambda stage: print(f"bench: {stage}…", file=sys.stderr, flush=True)  # noqa: E731
    if args.api:
        from ragkit_dev.bench import run_api_bench

        summary = run_api_bench(clients=args.api_clients, turns=args.api_turns, report=say)
    elif args.team:
        from ragkit_dev.bench import run_team_bench

        summary = run_team_bench(load_settings(**_overrides(args)), report=say)
    else:
        summary = run_bench(load_settings(**_overrides(args)), quick=args.quick, report=say)
    width = max(len(key) for key in summary)
    for key, value in summary.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    return 0


def _engine(args):
    settings = load_settings(**_overrides(args))
    return ragkit.ChatEngine(settings, ragkit.KnowledgeBase(settings))


def _history(args):
    settings = load_settings(**_overrides(args))
    return ragkit.HistoryManager(settings.sessions_location)


def print_sources(sources, out=sys.stdout) -> None:
    """The numbered source list of an answer, cited ones first."""
    for source in sorted(sources, key=lambda s: (not s.cited, s.n)):
        label = "" if source.cited else "  (also retrieved)"
        quote = terminal_safe(" ".join(source.quote.split()))
        where = (f"web: {terminal_safe(source.url)}" if source.web
                 else f"{terminal_safe(source.filename)}, p. {source.page}"
                 + (f", {terminal_safe(source.section_trail)}" if source.section_trail else "")
                 + f", score {source.score:.2f}")
        print(f"  [{source.n}] {terminal_safe(source.title)} — {where}{label}", file=out)
        print(f"      “{_clip(quote, 220)}”", file=out)


def cmd_ask(args) -> int:
    """Answer one question within a session, streaming the answer."""
    engine = _engine(args)
    turn = None
    streamed = ""
    progress = Progress(sys.stderr)
    try:
        filters = _search_filters(engine.kb, args)
        if filters.knowledge_bases:  # remembered: the conversation goes on searching them
            engine.history.set_session_knowledge_bases(args.session, filters.knowledge_bases)
        if args.mode:
            engine.history.set_session_mode(args.session, args.mode)
        for event in engine.stream(args.session, args.question, filters, model=args.model,
                                   replace_last=args.replace_last):
            kind = event["type"]  # the vocabulary: ragkit/graph/events.py
            if kind == "token" and not args.json:
                progress.clear()
                streamed += event["text"]
                print(terminal_safe(event["text"], keep_newlines=True), end="", flush=True)
            elif kind == "status":
                progress.show(event["text"])
            elif kind == "reset" and not args.json:
                streamed = ""
                then = (f"asking {terminal_safe(event['then'])}" if event.get("then")
                        else "showing the extractive answer")
                print(f"\n[model failed: {terminal_safe(str(event['error']))}; {then} instead]", flush=True)
            elif kind == "done":
                turn = event["turn"]
    except (QuestionError, SessionError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        progress.clear()
    fell_back = MODEL_FELL_BACK if turn.error and turn.mode != "llm" else 0
    if args.json:
        print(terminal_json(turn.to_dict()))
        return fell_back
    print()
    if streamed.strip() != turn.answer:  # markers or a rambling tail were removed
        recorded = terminal_safe(turn.answer, keep_newlines=True)
        print(f"\n— answer as recorded (checked citations, no markup):\n{recorded}")
    if turn.standalone_question != turn.question:
        print(f"(searched as: {terminal_safe(turn.standalone_question)})")
    modes = {"extractive": "extractive answer — offline", "not_found": "not found in the documents",
             "direct": "answered directly — no search"}
    mode = modes.get(turn.mode, f"generated by {terminal_safe(str(turn.model))}")
    print(f"({mode}; {turn.timings.get('total_ms', 0):.0f} ms)")
    if turn.id is None:
        unsaved = next((step.detail for step in turn.trace if step.step == "Not saved"), "")
        print(f"(not saved to the conversation: {unsaved})")
    if turn.found:
        print_sources(turn.sources)
    else:
        print("closest matches (not used as sources):")
        print_sources(turn.closest[:3])
    if args.trace:
        print("how this was answered:")
        for number, step in enumerate(turn.trace, start=1):
            print(f"  {number}. {step.step}: {terminal_safe(step.detail)}")
    if fell_back:
        print(f"note: the model failed ({terminal_safe(turn.error)}); exit code {MODEL_FELL_BACK}", file=sys.stderr)
    elif turn.error:  # a later model of the chain (RAGKIT_FALLBACK_MODELS) answered
        print(f"note: answered by {terminal_safe(turn.model)} after the model before it failed "
              f"({terminal_safe(turn.error)})", file=sys.stderr)
    return fell_back


class Progress:
    """What a turn is doing, on stderr while it runs (the answer goes to stdout): one line
    rewritten in place on a terminal, each new step on its own line otherwise."""

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""
        self.showing = False

    def show(self, text: str) -> None:
        """Show the current step."""
        text = terminal_safe(text)
        if self.tty:
            self.stream.write(f"\r\x1b[K… {text}")
            self.showing = True
        elif re.sub(r"\d+", "", text) != re.sub(r"\d+", "", self.last):  # not every second's count
            self.stream.write(f"… {text}\n")
        self.last = text
        self.stream.flush()

    def clear(self) -> None:
        """Remove the step line before the answer is printed."""
        if self.showing:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.showing = False


def cmd_sessions(args) -> int:
    """List, show, export, rename or delete sessions."""
    from datetime import datetime


    history = _history(args)
    try:
        if args.action in (None, "list"):
            sessions = history.list_sessions()
            if not sessions:
                print("no sessions yet: python -m ragkit ask QUESTION --session NAME")
            for info in sessions:
                updated = datetime.fromtimestamp(info.updated_at).strftime("%Y-%m-%d %H:%M")
                print(f"{info.id:<16} {info.turns:>3} turns  {updated}  {terminal_safe(info.title)}")
        elif args.action == "search":
            matches = history.search(_need(args.id, "the words to search for"))
            if not matches:
                print("no conversation holds all of these words")
            for match in matches:
                print(f"{match.info.id:<16} {terminal_safe(match.info.title)}")
                if match.snippet:
                    print(f"    {terminal_safe(match.snippet)}")
        elif args.action == "show":
            print(terminal_safe(history.export_markdown(_need(args.id)), keep_newlines=True))
        elif args.action == "export":
            session_id = _need(args.id)
            if args.format == "json":
                print(terminal_json_text(history.export_json(session_id)))
            else:
                print(terminal_safe(history.export_markdown(session_id), keep_newlines=True))
        elif args.action == "rename":
            info = history.rename(_need(args.id), _need(args.title, "a title"))
            print(f"{info.id}: {terminal_safe(info.title)}")
        elif args.action == "delete":
            history.delete(_need(args.id))
            print(f"deleted session {args.id}")
    except SessionError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _need(value, what: str = "a session id"):
    if not value:
        raise UsageError(f"this command needs {what}")
    return value


def positive_int(value: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_clip(terminal_safe(repr(value)), 40)} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def result_count(value: str) -> int:
    """An argparse type: how many passages to return, 1 to MAX_RESULTS."""
    number = positive_int(value)
    if number > MAX_RESULTS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RESULTS}, not {number}: ask for fewer passages "
                                         "(add --tag, --type or --doc to search only some documents)")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree for every command."""
    parser = Parser(prog="python -m ragkit", description="ragkit knowledge base")
    parser.add_argument("--data-dir", help="data directory (default: RAGKIT_DATA_DIR or ./data)")
    sub = parser.add_subparsers(dest="command", required=True)

    kb_help = "a knowledge base by name or id (see `kb list`)"
    p = sub.add_parser("ingest", help="add files, directories or web pages (http/https addresses)")
    p.add_argument("paths", nargs="+")
    p.add_argument("--tags", help="comma-separated tags")
    p.add_argument("--kb", help=kb_help + "; default: Default")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("docs", help="list documents")
    p.add_argument("--kb", action="append", help=kb_help + " (repeatable); default: all")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_docs)

    p = sub.add_parser("search", help="hybrid search")
    p.add_argument("query")
    p.add_argument("-k", type=result_count, default=5, help=f"number of passages (1 to {MAX_RESULTS})")
    p.add_argument("--doc", action="append", help="restrict to a document id (repeatable)")
    p.add_argument("--tag", action="append", help="restrict to a tag (repeatable)")
    p.add_argument("--type", action="append", help="restrict to a type: pdf, docx, txt, markdown...")
    p.add_argument("--kb", action="append", help=kb_help + " (repeatable); default: all")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("kb", help="list, create, rename or delete knowledge bases")
    p.add_argument("action", nargs="?", choices=["list", "create", "rename", "delete"])
    p.add_argument("name", nargs="?", help="the knowledge base (name or id); for create, the new name")
    p.add_argument("new_name", nargs="?", help="new name (rename)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kb)

    p = sub.add_parser("delete", help="delete documents by id")
    p.add_argument("ids", nargs="+")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("tag", help="set a document's tags and/or title")
    p.add_argument("id")
    p.add_argument("--tags", help="comma-separated tags (replaces the old ones)")
    p.add_argument("--title")
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("reindex", help="re-embed all chunks with the configured embedding model and backend "
                                       "(RAGKIT_EMBEDDING_BACKEND=onnx-int8 moves a float32 store to int8)")
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser("repair", help="rebuild the catalog or the vector index after data was lost or damaged")
    p.set_defaults(func=cmd_repair)

    p = sub.add_parser("eval", help="measure retrieval (and answer) quality on a SQuAD-format file")
    p.add_argument("path", nargs="?", help="the SQuAD-format file (not needed with --identifiers)")
    p.add_argument("--answers", action="store_true",
                   help="also ask every question through the chat graph and score its answers")
    p.add_argument("--unanswerable", action="store_true",
                   help="index half the set; measure answering what is there and saying 'not found' for the rest")
    p.add_argument("--dialogues", metavar="FILE", help="two-turn dialogues (follow-ups, topic switches) to measure")
    p.add_argument("--support", nargs="+", metavar="FILE",
                   help="the support check's precision and recall per language on labelled sentences built from "
                        "these SQuAD-format files (gold answer sentences, restated, and with the answer swapped)")
    p.add_argument("--identifiers", type=int, metavar="N",
                   help="N near-identical passages holding unique codes: is each code's passage first?")
    p.add_argument("--multihop", action="store_true",
                   help="PATH is in the HotpotQA format: evidence found for every hop, answers, rounds")
    p.add_argument("--mode", choices=["default", "agentic"], help="the answer mode every question is asked in "
                   "(default: RAGKIT_CHAT_MODE)")
    p.add_argument("--compare-modes", action="store_true",
                   help="answer every question in both answer modes, alternating which goes first, and compare "
                        "their answers and median latency (implies --answers)")
    p.add_argument("--limit", type=int, help="only the first N questions")
    p.add_argument("--json", action="store_true", help="end with one JSON line")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("bench", help="speed and memory figures")
    p.add_argument("--quick", action="store_true", help="a small workload (under a minute): a smoke test")
    p.add_argument("--team", action="store_true",
                   help="the same small workload on local files and on RAGKIT_DATABASE_URL + RAGKIT_CHROMA_URL, "
                        "side by side (give it a scratch database and Chroma server)")
    p.add_argument("--peer", action="store_true",
                   help="only ragkit beside the usual LangChain stack (splitter 1000/200, MiniLM, Chroma) on the "
                        "shared QA sets' files: first-run ingest, search latency, hit@5")
    p.add_argument("--api", action="store_true",
                   help="only the HTTP API under load: the real app, a headless Chromium asking on the Chat page "
                        "while API clients ask too; the page's answer times idle and loaded (needs chromium)")
    p.add_argument("--api-clients", type=int, default=8, help="--api: concurrent API clients (default 8)")
    p.add_argument("--api-turns", type=int, default=None,
                   help="--api: RAGKIT_API_CONCURRENT_TURNS for the app (default: the setting's default)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("ask", help="ask a question within a session")
    p.add_argument("question")
    p.add_argument("--session", default="default", help="session id (letters, digits, - and _)")
    p.add_argument("--doc", action="append", help="restrict to a document id (repeatable)")
    p.add_argument("--tag", action="append", help="restrict to a tag (repeatable)")
    p.add_argument("--type", action="append", help="restrict to a document type")
    p.add_argument("--kb", action="append",
                   help=kb_help + " (repeatable; remembered for the session); default: the session's, else all")
    p.add_argument("--json", action="store_true", help="print the recorded turn as JSON")
    p.add_argument("--trace", action="store_true", help="also print how the answer was reached")
    p.add_argument("--model", help="a model choice id (see RAGKIT_CHAT_MODELS); 'extractive' for offline")
    p.add_argument("--replace-last", action="store_true",
                   help="answer in place of the session's latest question (edit and resend, or ask it again to "
                        "regenerate); the replaced answer stays in the export")
    p.add_argument("--mode", choices=["default", "agentic"],
                   help="answer mode (default: the conversation's, else RAGKIT_CHAT_MODE); remembered for the session")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("sessions", help="list, search, show, rename, export or delete sessions")
    p.add_argument("action", nargs="?", choices=["list", "search", "show", "rename", "delete", "export"])
    p.add_argument("id", nargs="?", help="a session id (search: the words to look for)")
    p.add_argument("title", nargs="?", help="new title (rename)")
    p.add_argument("--format", choices=["markdown", "json"], default="markdown", help="export format")
    p.set_defaults(func=cmd_sessions)
    for command in sub.choices.values():  # "--mode" must never be read as an abbreviation of "--model"
        command.allow_abbrev = False
    return parser


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 arrive as lone surrogates
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for name, value in vars(args).items():
        if isinstance(value, str) and not _encodable(value):
            print(f"error: the {name} argument is not valid UTF-8 text (check the terminal's encoding)",
                  file=sys.stderr)
            return 2
    try:
        return args.func(args) or 0
    except RagkitError as exc:
        print(f"error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"error: {type(exc).__name__}: {terminal_safe(str(exc))}", file=sys.stderr)
        return 1
