"""Faults a user meets on the way in (issue 15): hostile folders and names, absurd
arguments, files that cost far more memory than their size, and text that is garbage or
only partly decodable.

Everything here is real: folders with real symbolic links, the command line run as a
separate process on a real data dir (and the real embedding model), files generated to
the sizes a user could hand over. Memory is measured in a fresh interpreter (peak RSS
growth while the one call runs); work that must be linear is counted, not timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from ragkit.app.render import escape_markdown, terminal_json, terminal_safe
from ragkit.errors import InputError
from ragkit.ingest.folders import collect_files
from ragkit.store.tags import MAX_TAGS, checked_tags, normalize_tags
from work_counting import count_operations

ESC = "\x1b"


def run_cli(data_dir: Path, *args, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m ragkit --data-dir DATA ARGS`` as a user runs it."""
    command = [sys.executable, "-m", "ragkit", "--data-dir", str(data_dir), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=timeout)


# --- 1. symbolic links in a folder -------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory) -> Path:
    """A folder a user might be handed: one real note, links out of it (a file and a
    folder), a link to a file inside it, a dangling link, and hostile file names."""
    root = tmp_path_factory.mktemp("handed-over")
    secret = root / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash keeper of the outside secret\n", encoding="utf-8")
    folder = root / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("The lighthouse lamp is lit at dusk by the keeper.\n", encoding="utf-8")
    (folder / "passwd.txt").symlink_to(secret)
    (folder / "outside-link").symlink_to(secret.parent, target_is_directory=True)
    (folder / "alias.txt").symlink_to("notes.txt")
    (folder / "dangling.txt").symlink_to("gone.txt")
    (folder / "sub" / "lamp.md").write_text("# Lamp\n\nThe lamp burns whale oil in winter.\n", encoding="utf-8")
    (folder / "sub" / f"evil{ESC}[2Jname\n+ added       forged.txt").write_text("Forged line test file about tides.\n")
    (folder / "sub" / "右\u202egnp.txt").write_text("Bidirectional override name about fog horns.\n")
    (folder / "茶园笔记.txt").write_text("茶园每天早上八点开门。\n", encoding="utf-8")
    (folder / os.fsdecode(b"latin1-caf\xe9.txt")).write_text("not UTF-8 name\n")
    return folder


def test_a_folder_walk_skips_every_link_and_names_it(hostile_folder):
    selection = collect_files([hostile_folder])

    names = sorted(path.name for path in selection.files)
    assert names == sorted(["notes.txt", "lamp.md", f"evil{ESC}[2Jname\n+ added       forged.txt",
                            "右\u202egnp.txt", "茶园笔记.txt"])
    skipped = {path.name: reason for path, reason in ((s.path, s.reason) for s in selection.skipped)}
    assert skipped["passwd.txt"].startswith("a symbolic link to a file outside the folder")
    assert "never followed" in skipped["passwd.txt"] and "secret.txt" in skipped["passwd.txt"]
    assert skipped["outside-link"].startswith("a symbolic link to a folder outside the folder")
    assert skipped["alias.txt"] == ("a symbolic link to a file inside the folder, docs/notes.txt "
                                    "(taken under its own name): links are not followed")
    assert "does not exist" in skipped["dangling.txt"]
    assert skipped[os.fsdecode(b"latin1-caf\xe9.txt")] == "the name is not valid UTF-8 text: rename it to add it"
    for item in selection.skipped:
        assert item.message.startswith(str(hostile_folder)), item.message


def test_a_file_named_on_the_command_line_is_taken_even_when_it_is_a_link(hostile_folder):
    """Naming a path is the user's explicit choice (as with cat or cp)."""
    link = hostile_folder / "passwd.txt"
    assert collect_files([link]).files == [link]
    linked_folder = hostile_folder / "outside-link"
    assert [path.name for path in collect_files([linked_folder]).files] == ["secret.txt"]


def test_links_in_a_folder_inside_the_folder_to_a_folder_are_reported(tmp_path):
    folder = tmp_path / "docs"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "a.txt").write_text("alpha")
    (folder / "again").symlink_to("real", target_is_directory=True)
    (folder / "loop").symlink_to(".", target_is_directory=True)
    selection = collect_files([folder])
    assert [path.name for path in selection.files] == ["a.txt"]
    reasons = {s.path.name: s.reason for s in selection.skipped}
    assert reasons["again"] == "a symbolic link to a folder inside the folder, docs/real: links are not followed"
    assert reasons["loop"] == "a symbolic link to a folder inside the folder, docs: links are not followed"


@pytest.fixture(scope="module")
def ingested(hostile_folder, tmp_path_factory):
    """The hostile folder ingested by the command line (one process, the real model)."""
    data_dir = tmp_path_factory.mktemp("cli-data")
    return data_dir, run_cli(data_dir, "ingest", hostile_folder)


def test_ingesting_the_folder_skips_links_with_a_message_and_keeps_the_secret_out(ingested, hostile_folder):
    data_dir, result = ingested
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"- skipped     {hostile_folder}/passwd.txt: a symbolic link to a file outside the folder" in result.stdout
    assert any(line.startswith(f"- skipped     {hostile_folder}/outside-link: a symbolic link to a folder")
               for line in lines)
    assert sum(line.startswith("+ added") for line in lines) == 5

    search = run_cli(data_dir, "search", "root bin bash", "--json")
    assert search.returncode == 0, search.stderr
    assert all("secret" not in hit["text"] and "/bin/bash" not in hit["text"] for hit in json.loads(search.stdout))
    assert "secret.txt" not in run_cli(data_dir, "docs", "--json").stdout


# --- 10. names print inert ----------------------------------------------------------------


def assert_inert(output: str) -> None:
    assert ESC not in output and "\u202e" not in output and "\r" not in output
    for line in output.splitlines():
        assert not line.startswith("+ added       forged.txt"), "a file name forged an output line"


def test_hostile_names_print_as_visible_codes_in_every_command(ingested):
    data_dir, result = ingested
    assert_inert(result.stdout + result.stderr)
    assert "evil\\x1b[2Jname\\n+ added       forged.txt: added" in result.stdout
    assert "右\\u202egnp.txt: added" in result.stdout
    assert "茶园笔记.txt: added" in result.stdout, "Chinese stays as it is"
    assert "latin1-caf\\xe9.txt: the name is not valid UTF-8 text" in result.stdout

    docs = run_cli(data_dir, "docs")
    assert docs.returncode == 0 and len(docs.stdout.splitlines()) == 1 + 5, docs.stdout
    assert_inert(docs.stdout)
    assert "evil\\x1b[2Jname\\n+ a" in docs.stdout and "茶园笔记" in docs.stdout

    search = run_cli(data_dir, "search", "forged line tides", "-k", "2")
    assert search.returncode == 0, search.stderr
    assert_inert(search.stdout)
    assert "(evil\\x1b[2Jname\\n+ added       forged.txt, p.1)" in search.stdout

    as_json = run_cli(data_dir, "docs", "--json")
    assert_inert(as_json.stdout)
    filenames = {doc["filename"] for doc in json.loads(as_json.stdout)}
    assert f"evil{ESC}[2Jname\n+ added       forged.txt" in filenames, "JSON keeps the data, escaped"

    forged = next(doc for doc in json.loads(as_json.stdout) if doc["filename"].startswith("evil"))
    deleted = run_cli(data_dir, "delete", forged["id"])
    assert deleted.returncode == 0 and "(evil\\x1b[2Jname\\n+ added       forged.txt)" in deleted.stdout
    assert_inert(deleted.stdout)


def test_terminal_safe_shows_controls_and_keeps_scripts():
    assert terminal_safe(f"a{ESC}[2Jb\nc\td\r") == "a\\x1b[2Jb\\nc\\td\\r"
    assert terminal_safe("\x85\x9b\x7f\u2028\u202e\u2066") == "\\x85\\x9b\\x7f\\u2028\\u202e\\u2066"
    assert terminal_safe(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    kept = "茶园笔记 · Ελληνικά · עברית · नमस्ते · 👩‍💻 · پی‌اچ‌دی"  # joiners inside scripts and emoji stay
    assert terminal_safe(kept) == kept
    assert terminal_safe(f"line one\nline{ESC} two", keep_newlines=True) == "line one\nline\\x1b two"
    value = {"name": f"x{ESC}\x9b\u202e\udcff中\n"}
    shown = terminal_json(value)
    assert json.loads(shown) == value and ESC not in shown and "\u202e" not in shown and "中" in shown


# --- 12. tags ------------------------------------------------------------------------------


def test_normalizing_tags_is_linear():
    def tags(n: int) -> list[str]:
        return [",".join(f"t{i}" for i in range(n))]

    small = count_operations(normalize_tags, tags(20_000))
    large = count_operations(normalize_tags, tags(80_000))
    assert large < 4.5 * small, (small, large)  # a list's `in` made this 16x
    assert normalize_tags([" a, b ,a", "c,,b", "a"]) == ["a", "b", "c"]


def test_two_hundred_thousand_tags_are_refused_with_a_limit_and_a_reason(kb, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("Tide tables for the harbour.", encoding="utf-8")
    doc = kb.ingest(note).document
    many = [",".join(f"tag{i}" for i in range(200_000))]

    with pytest.raises(InputError, match=rf"^200,000 tags given; a document can have at most {MAX_TAGS}: "):
        kb.update_metadata(doc.id, tags=many)
    with pytest.raises(InputError, match="at most 100"):
        kb.ingest(note, tags=many)
    assert kb.document(doc.id).tags == []
    assert len(checked_tags([",".join(f"tag{i}" for i in range(MAX_TAGS))])) == MAX_TAGS
    with pytest.raises(InputError, match="tags can be at most 100 characters long"):
        checked_tags(["x" * 101])
    assert kb.update_metadata(doc.id, tags=["tides", " harbour ", "tides"]).tags == ["tides", "harbour"]


def test_the_command_line_refuses_too_many_tags_with_a_message(ingested):
    """As many tags as one command-line argument can hold (the kernel caps one at 128 KB)."""
    data_dir, _ = ingested
    doc_id = json.loads(run_cli(data_dir, "docs", "--json").stdout)[0]["id"]
    refused = run_cli(data_dir, "tag", doc_id, "--tags", ",".join(f"t{i}" for i in range(15_000)))
    assert refused.returncode == 1
    assert refused.stderr == f"error: 15,000 tags given; a document can have at most {MAX_TAGS}: " \
                             "use a few broad tags (tags are labels to filter by, not data)\n"
    accepted = run_cli(data_dir, "tag", doc_id, "--tags", "lamp, keeper ,lamp")
    assert accepted.returncode == 0 and accepted.stdout.strip().endswith("tags=lamp,keeper")


def test_the_documents_page_refuses_too_many_tags_and_keeps_the_old_ones(tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "appdata"))
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=120).run()
        at.switch_page("pages/documents.py").run()
        from pages._service import service_future

        service = service_future().result()
        job = service.uploads.submit("tides.txt", b"Tide tables for the harbour.", ["harbour"])
        assert service.uploads.wait([job.id], timeout_s=120) and job.result.ok
        at.session_state["selected-documents"] = [job.result.document.id]
        at.run()
        next(t for t in at.text_input if t.label == "Tags").input(",".join(f"t{i}" for i in range(150)))
        next(b for b in at.button if b.label == "Save").click().run()

        assert not at.exception
        assert [e.value for e in at.error] == [escape_markdown(
            "150 tags given; a document can have at most 100: use a few broad tags (tags are labels to filter by, "
            "not data)")]
        assert service.kb.document(job.result.document.id).tags == ["harbour"]
    finally:
        st.cache_resource.clear()


# --- 13. -k ---------------------------------------------------------------------------------


def test_search_k_is_bounded_with_a_clear_message(tmp_path):
    for k in ("1" + "0" * 30, "1001"):
        result = run_cli(tmp_path / "data", "search", "lamp", "-k", k)
        assert result.returncode == 2
        assert f"argument -k: must be at most 1000, not {int(k)}: ask for fewer passages" in result.stderr
    huge = run_cli(tmp_path / "data", "search", "lamp", "-k", "9" * 5000)
    assert huge.returncode == 2 and "is not a whole number" in huge.stderr and len(huge.stderr) < 400


# --- measurement in a fresh interpreter ---------------------------------------------------

MB = 1024 * 1024
MEASURE = """
import json, resource, sys, time
import charset_normalizer, lxml.etree, pypdf
from ragkit.ingest import load_path
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.process_time()
try:
    doc = load_path(sys.argv[1], max_bytes=50 * 1024 * 1024)
    outcome = {"pages": doc.pages, "notes": doc.notes}
except Exception as exc:
    outcome = {"error": f"{type(exc).__name__}: {exc}"}
outcome["grown_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
outcome["cpu_s"] = time.process_time() - started
print(json.dumps(outcome))
"""


def load_in_subprocess(path: Path) -> dict:
    """load_path(path) in a fresh interpreter: the pages or the error, how far its peak
    RSS grew (the file's bytes included) and the CPU seconds it took."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- 7. deeply nested HTML ---------------------------------------------------------------


@pytest.mark.slow
def test_deeply_nested_html_loads_within_four_times_its_size(tmp_path):
    """24 MB of unclosed <b><i><span> (the issue's file: 114 s and 3 GB with BeautifulSoup)."""
    page = tmp_path / "nested.html"
    page.write_bytes(b"<b><i><span>" * 2_000_000 + b"nine char")
    size_mb = page.stat().st_size / MB

    measured = load_in_subprocess(page)

    assert measured.get("pages") == ["nine char"], measured.get("error")
    assert measured["grown_mb"] < 4 * size_mb, measured
    print(f"nested HTML {size_mb:.0f} MB: peak +{measured['grown_mb']:.0f} MB, {measured['cpu_s']:.1f} s CPU")


def test_nesting_past_the_limit_is_read_as_flat_text_with_scripts_dropped():
    from ragkit.ingest import load_bytes
    from ragkit.ingest.converters.html import MAX_HTML_NESTING

    deep = (b"<title>Deep &amp; odd</title>" + b"<div>" * (MAX_HTML_NESTING + 5) + b"Tide &lt;table&gt;"
            b"<script>alert('x')</script><!-- hidden --><style>p{}</style>" + b"<p>end</p><title>Second</title>")
    doc = load_bytes(deep, "deep.html")
    assert doc.pages == ["Deep & odd\n\nTide <table>\nend\n\nSecond"], doc.pages
    assert doc.title == "Deep & odd", "the first <title>"
    shallow = load_bytes(b"<html><head><title>T</title><script>x()</script></head><body><p>One <b>two</b></p>"
                         b"<noscript>ns</noscript><template>t</template></body></html>", "page.html")
    assert shallow.pages == ["One\ntwo"] and shallow.title == "T", "the title names the page, not a line of it"


def test_nested_html_work_grows_linearly():
    from ragkit.errors import LoaderError
    from ragkit.ingest import load_bytes
    from work_counting import cpu_seconds

    def load(data: bytes) -> None:
        try:
            load_bytes(data, "nested.html")
        except LoaderError:
            pass

    small, large = b"<b><i><span>" * 50_000 + b"x", b"<b><i><span>" * 200_000 + b"x"
    load(small)
    assert cpu_seconds(load, large) < 9 * max(cpu_seconds(load, small), 0.002)


# --- 13. wide CSV ------------------------------------------------------------------------


def test_a_csv_of_a_million_columns_is_refused_at_once_in_bounded_memory(tmp_path):
    table = tmp_path / "wide.csv"
    columns = 1_000_000
    table.write_text(",".join(f"c{i}" for i in range(columns)) + "\n" + ",".join(f"v{i}" for i in range(columns)))
    size_mb = table.stat().st_size / MB

    measured = load_in_subprocess(table)

    assert measured.get("error", "").startswith(
        "LoaderError: wide.csv: a line of the CSV has more than 10,000 columns; tables that wide are not read "
        "row by row: transpose it (one record per row) or save it as .txt to index it as plain text")
    assert measured["grown_mb"] < 4 * size_mb, measured
    assert measured["cpu_s"] < 30, measured  # minutes before


def test_csv_up_to_the_column_limit_loads_and_labelled_text_is_bounded():
    from ragkit.errors import LoaderError
    from ragkit.ingest import load_bytes
    from ragkit.ingest.converters.csv import MAX_CSV_COLUMNS

    header = ",".join(f"c{i}" for i in range(MAX_CSV_COLUMNS))
    doc = load_bytes((header + "\n" + ",".join(["1"] * MAX_CSV_COLUMNS)).encode(), "wide.csv")
    assert doc.pages[0].startswith("c0: 1; c1: 1") and doc.pages[0].endswith(f"c{MAX_CSV_COLUMNS - 1}: 1")
    long_names = ",".join(f"{'column name ' * 8}{i}" for i in range(100))
    bomb = (long_names + "\n" + "1," * 99 + "1\n" * 1).encode() + ("1," * 99 + "1\n").encode() * 2000
    with pytest.raises(LoaderError, match=r"^bomb\.csv: written out as labelled rows .* would pass 1 MB "
                                          r"\(RAGKIT_MAX_UNPACKED_MB\)"):
        load_bytes(bomb, "bomb.csv", max_unpacked_bytes=MB)
    assert load_bytes(b"a,b\n1,2\n3,\n,\n5,6", "t.csv").pages == ["a: 1; b: 2\n\na: 3\n\na: 5; b: 6"]
    assert load_bytes(b"a,b\n", "t.csv").pages == ["a | b"]


# --- 13. mixed encodings -----------------------------------------------------------------

UTF8_ZH = ("茶园每天早上八点开门，门票价格是二十元。\n" * 60).encode("utf-8")
GBK_LINES = ("这一行是用旧的编码写的，来自另一个文件。\n" * 40).encode("gbk")
CP1252_LINES = ("Le café est ouvert à huit heures, près du marché, où l'été.\n" * 40).encode("cp1252")


@pytest.mark.parametrize("extra, encoding", [(GBK_LINES, "GB18030"), (CP1252_LINES, "Windows-1252")],
                         ids=["utf8+gbk", "utf8+cp1252"])
def test_mostly_utf8_text_with_lines_in_another_encoding_decodes_and_says_so(extra, encoding):
    from ragkit.ingest import load_bytes

    doc = load_bytes(UTF8_ZH + extra + UTF8_ZH, "notes.txt")
    assert doc.notes == [f"40 lines were not UTF-8, read as {encoding}"]
    assert "\ufffd" not in doc.pages[0]
    assert extra.decode("gbk" if encoding == "GB18030" else "cp1252").strip() in doc.pages[0]


def test_bytes_no_encoding_reads_are_replaced_and_counted(kb, tmp_path):
    junk = bytes([0xFF, 0xFE, 0x80, 0xC3]) * 30  # no encoding reads these as text
    path = tmp_path / "pasted.txt"
    path.write_bytes(UTF8_ZH + junk + b"\n" + UTF8_ZH)

    result = kb.ingest(path)

    assert result.status == "added"
    assert result.message.startswith("pasted.txt: added (1 page, ")
    assert result.message.endswith("; 120 undecodable bytes replaced by \ufffd"), result.message
    assert "门票价格" in " ".join(p.text for p in kb.passages(result.document.id))


@pytest.mark.parametrize("data", [os.urandom(50_000), bytes(range(1, 256)) * 200,
                                  UTF8_ZH[:300] + os.urandom(20_000)], ids=["random", "all bytes", "utf8 head"])
def test_real_binary_is_still_refused(data):
    from ragkit.errors import LoaderError
    from ragkit.ingest import load_bytes

    with pytest.raises(LoaderError, match=r"^blob\.txt: looks like a binary file, not text"):
        load_bytes(data, "blob.txt")


# --- 11. garbage PDFs ----------------------------------------------------------------------


def pdf_file(objects: dict[int, bytes]) -> bytes:
    out = bytearray(b"%PDF-1.7\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for number in sorted(objects):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def pdf_stream(body: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(body) + body + b"\nendstream"


def type3_pdf(pages: list[list[list[int]]], to_unicode: dict[int, str] | None = None) -> bytes:
    """Pages of lines of codes drawn in one Type3 font whose glyphs are named /g1, /g2...
    (a font from a PDF printer), with a ToUnicode map only when one is given."""
    count = max(code for page in pages for line in page for code in line)
    names = b" ".join(b"/g%d" % code for code in range(1, count + 1))
    procs = b" ".join(b"/g%d 6 0 R" % code for code in range(1, count + 1))
    font = (b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [0.001 0 0 0.001 0 0] "
            b"/CharProcs << " + procs + b" >> /Encoding << /Type /Encoding /Differences [1 " + names + b"] >> "
            b"/FirstChar 1 /LastChar %d /Widths [%s]" % (count, b" ".join([b"500"] * count)))
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 6: pdf_stream(b"500 0 0 0 500 500 d1 0 0 500 500 re f")}
    if to_unicode is not None:
        cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def "
                b"1 begincodespacerange <01> <ff> endcodespacerange %d beginbfchar\n" % len(to_unicode))
        cmap += b"".join(b"<%02x> <%s>\n" % (code, char.encode("utf-16-be").hex().encode())
                         for code, char in to_unicode.items())
        objects[7] = pdf_stream(cmap + b"endbfchar endcmap CMapName currentdict /CMap defineresource pop end end")
        font += b" /ToUnicode 7 0 R"
    objects[5] = font + b" >>"
    kids = []
    for index, lines in enumerate(pages):
        page_id, content_id = 10 + 2 * index, 11 + 2 * index
        kids.append(b"%d 0 R" % page_id)
        content = b"BT /F1 12 Tf 72 720 Td 14 TL\n" + b"".join(
            b"<" + bytes(line).hex().encode() + b"> Tj T*\n" for line in lines) + b"ET"
        objects[page_id] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                            b"/Resources << /Font << /F1 5 0 R >> >> >>" % content_id)
        objects[content_id] = pdf_stream(content)
    objects[2] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % len(pages)
    return pdf_file(objects)


def text_pdf(pages: list[list[str]], to_unicode=lambda char: char) -> bytes:
    """Pages of text lines in a Type3 font whose ToUnicode map says ``to_unicode(char)``
    for each character drawn: real text in any script, or garbage when the map lies."""
    chars = sorted({char for page in pages for line in page for char in line})
    code = {char: number for number, char in enumerate(chars, start=1)}
    return type3_pdf([[[code[char] for char in line] for line in page] for page in pages],
                     {code[char]: to_unicode(char) for char in chars})


LINES = ["The keeper lights the lamp at dusk every day.", "Storm logs are kept in the tower."] * 4
SCRIPTS = {
    "english": LINES,
    "chinese": ["灯塔看守人每天黄昏点亮灯。", "风暴记录保存在塔里。"] * 4,
    "russian": ["Смотритель зажигает лампу каждый вечер."] * 4,
    "arabic": ["يشعل حارس المنارة المصباح عند الغسق كل يوم."] * 4,
    "hindi": ["रखवाला हर दिन शाम को दीपक जलाता है।"] * 4,
    "greek": ["Ο φύλακας ανάβει τη λάμπα κάθε σούρουπο."] * 4,
}


@pytest.mark.parametrize("name, data, reason", [
    ("type3", type3_pdf([[[1, 2, 3, 4, 5, 6, 7] * 8] * 6]), "glyph names instead of letters (such as /g1/g2/g3"),
    ("private", text_pdf([LINES], lambda char: char if char == " " else chr(0xE000 + ord(char))),
     "private-use characters"),
    ("unmapped", text_pdf([LINES], lambda char: char if char == " " else "\ufffd"), "replacement characters"),
], ids=["type3 without ToUnicode", "private-use characters", "replacement characters"])
def test_garbage_pdfs_are_refused_with_the_reason(name, data, reason):
    from ragkit.errors import LoaderError
    from ragkit.ingest import load_bytes

    with pytest.raises(LoaderError) as refused:
        load_bytes(data, f"{name}.pdf")
    message = str(refused.value)
    assert message.startswith(f"{name}.pdf: the text extracted from the PDF is not readable: it comes out as {reason}")
    assert "run the PDF through OCR" in message


@pytest.mark.parametrize("script", SCRIPTS, ids=SCRIPTS)
def test_pdfs_of_real_text_in_any_script_still_load(script):
    from ragkit.ingest import load_bytes

    doc = load_bytes(text_pdf([SCRIPTS[script]]), f"{script}.pdf")
    assert doc.notes == [] and len(doc.pages[0]) > 40
    if script != "arabic":  # pypdf returns right-to-left text in visual order
        assert SCRIPTS[script][0] in doc.pages[0]


def test_the_chinese_fixture_and_a_pdf_with_symbol_bullets_still_load():
    from conftest import FIXTURES
    from ragkit.ingest import load_path
    from ragkit.ingest.converters.pdf import garbage_reason

    chinese = load_path(FIXTURES / "tea_garden_zh.pdf")
    assert chinese.notes == [] and any("门票" in page for page in chinese.pages)
    bullets = "\n".join(f"\uf0b7 Item {n}: the lamp is cleaned every morning." for n in range(20))
    assert garbage_reason(bullets) is None  # Word's Symbol-font bullets are private-use characters
    assert garbage_reason("Configs live in /etc/nginx/sites-available and /usr/local/bin. " * 10) is None


def test_a_pdf_with_some_garbage_pages_keeps_the_readable_ones_and_says_so(kb, tmp_path):
    chars = sorted({char for line in LINES for char in line})
    code = {char: number for number, char in enumerate(chars, start=1)}
    pages = [[[code[char] for char in line] for line in page] for page in (LINES, LINES)]
    mapping = {code[char]: char for char in chars}
    garbage_page = [[len(chars) + 1, len(chars) + 2, len(chars) + 3] * 10] * 5  # codes without a mapping
    path = tmp_path / "mixed.pdf"
    path.write_bytes(type3_pdf([pages[0], garbage_page, pages[1]], mapping))

    result = kb.ingest(path)

    assert result.status == "added", result.message
    assert result.message.endswith("; 1 page of unreadable text left out (p. 2: fonts without a Unicode map; "
                                   "OCR would read them)"), result.message
    assert result.document.pages == 3
    assert all("/g" not in passage.text for passage in kb.passages(result.document.id))
