"""Untrusted text renders as inert Markdown: whatever a document, a question or a model
writes, a real CommonMark parser finds no image, link, HTML, code, heading or table in it,
and nothing that Streamlit or GFM would rewrite after parsing (autolink literals, emoji
and icon shortcodes)."""

import json
import re
import time
from pathlib import Path

import pytest

from inert_markdown import ANSWER_TAGS, PLAIN_TAGS, assert_inert, assert_inert_for_viewers, parse, tags, visible
from ragkit.app.history import HistoryManager
from ragkit.app.render import (
    WORD_JOINER,
    escape_line,
    escape_markdown,
    readable_answer_markdown,
    readable_line,
    safe_answer_markdown,
)
from ragkit.lang.text import match_spans, strip_html
from ragkit.types import Source, Turn

REPO = Path(__file__).resolve().parents[1]
URL = "http://127.0.0.1:8765"
HOSTILE = [
    f"![a [b] c]({URL}/nested.png?q=1)",
    f"![x][r]\n\n[r]: {URL}/ref.png",
    f"![x][]\n[x]: {URL}/collapsed.png",
    f"[![inner]({URL}/i.png)]({URL}/outer)",
    f"![a](<{URL}/angle brackets.png>)",
    f'![t]({URL}/t.png "title")',
    f"[site]({URL}) and [ref][1]\n[1]: {URL}/def",
    f"<{URL}/autolink.png> <mailto:a@b.c> <a@b.c>",
    f"{URL}/bare.png and www.example.com and https://example.com/x and user@example.com",
    f'<img src="{URL}/tag.png"> <script>alert(1)</script> <a href="{URL}">x</a> <!-- c --> <?php ?>',
    f"&lt;img src=&quot;{URL}/entity.png&quot;&gt; &#60;img&#62; &#x3C;b&#x3E; &amp;lt;",
    "$x^2$ and $$\\int_0^1 f$$ and \\(a\\) \\[b\\]",
    ":smile: :+1: :material/home: :streamlit: :red[alert] :orange-background[x] :small[s] :help[h]",
    "::leaf[x]{src=evil}\n:::container\nbody\n:::",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "# heading\n## sub\nSetext\n===\nOther\n---",
    "`code` ``x`` ```fence```\n```\nblock\n```\n~~~\nblock\n~~~\n    indented code\n\tTab code",
    "> quote\n- item\n+ item\n* item\n1. one\n2) two\n- [ ] task",
    "***\n___\n- - -\n**bold** __bold__ *it* _it_ ~~strike~~ ~one~",
    "footnote[^1]\n\n[^1]: " + URL + "/fn",
    "a\\\nb  \nc\\*not\\* \\\\ \\![x](y)",
    f"<http://a.b/{'(' * 50}> ![{'[' * 200}x{']' * 200}]({URL}/deep.png)",
    "-> <- <-> -- >= <= ~=",
    "",
    "   ",
]
LONG = [
    f"![a [b] c]({URL}/x.png) " * 5000,
    "[" * 50_000 + "](" + URL + ")" + "]" * 50_000,
    "**a " * 40_000 + "*" * 10_000,
    "<" * 20_000 + "img src=x>" + ">" * 20_000,
    "\n".join(f"{n}. ![x]({URL}/{n}.png) **b** `c` <i>" for n in range(10_000)),
]
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_escaped_text_renders_only_as_literal_text(text):
    for escape in (escape_markdown, escape_line):
        assert_inert(escape(text), PLAIN_TAGS)
    rendered, _ = parse(escape_line(text))
    assert " ".join(visible(rendered).split()) == " ".join(text.split()), "the reader sees exactly the input"


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_answers_keep_only_the_allow_list(text):
    assert_inert(safe_answer_markdown(text), ANSWER_TAGS)


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_exported_text_renders_literally_in_any_viewer_and_reads_as_typed(text):
    assert_inert_for_viewers(readable_line(text), PLAIN_TAGS)
    assert_inert_for_viewers(readable_answer_markdown(text), ANSWER_TAGS)
    rendered, _ = parse(readable_line(text))
    assert " ".join(visible(rendered).split()) == " ".join(text.split()), "the reader sees exactly the input"


def test_exported_prose_keeps_its_punctuation_and_times():
    prose = "Dr. Silva met at 14:33 in the well-known café (room 2.1) - see report_en-2.pdf: 18% growth [1]."
    assert readable_line(prose) == prose
    assert readable_line("1. first") == "1\\. first" and readable_line("- item") == "\\- item"
    assert readable_line("see https://x.io or www.x.io") == f"see https:{WORD_JOINER}//x.io or www{WORD_JOINER}.x.io"


@pytest.mark.parametrize("text", LONG, ids=["images", "brackets", "emphasis", "angles", "list"])
def test_very_long_hostile_inputs_are_inert_and_fast(text):
    started = time.perf_counter()
    answer, line = safe_answer_markdown(text), escape_line(text)
    assert time.perf_counter() - started < 5, "linear-time escaping"
    exported = readable_answer_markdown(text), readable_line(text)
    assert_inert_for_viewers(exported[0], ANSWER_TAGS)
    assert_inert_for_viewers(exported[1], PLAIN_TAGS)
    assert_inert(answer, ANSWER_TAGS)
    assert_inert(line, PLAIN_TAGS)


def test_answer_allow_list_bold_italic_lists_paragraphs_and_line_breaks():
    answer = ("Revenue grew **18% [1]** and *fast* [2].\nSecond line.\n\n"
              "- first <b>x</b>\n* second\n1. third\n\nLast *![i](http://e/i.png)* paragraph.")
    rendered, _ = parse(safe_answer_markdown(answer))
    assert "<strong>18% [1]</strong>" in rendered and "<em>fast</em> [2]." in rendered
    assert "[2].<br />\nSecond line." in rendered
    assert "<li>first &lt;b&gt;x&lt;/b&gt;</li>\n<li>second</li>" in rendered and '<li>third</li>' in rendered
    assert "<p>Last <em>![i](http:\u2060//e/i.png)</em> paragraph.</p>" in rendered
    assert tags(rendered) == ANSWER_TAGS


def test_citation_markers_read_as_typed():
    rendered, _ = parse(safe_answer_markdown("Founded in 2011 [1][2], in Lisbon [3]."))
    assert visible(rendered).strip() == "Founded in 2011 [1][2], in Lisbon [3]."


def test_file_names_stay_readable_and_round_trip():
    assert escape_line("report_en-2.pdf") == "report_en-2.pdf"
    assert escape_line("__init__.py") == "\\_\\_init\\_\\_\\.py"
    hostile = "<script>alert(1)</script> ![x](http://evil/p.png) [a](javascript:x) **bold** $x^2$ :red[hi]"
    escaped = escape_markdown(hostile)
    assert re.search(r"(?<!\\)[<>\[\]()*$:!]", escaped) is None, "every control character is escaped"
    assert escaped.replace("\\", "").replace(WORD_JOINER, "") == hostile


def test_model_html_and_entities_never_turn_into_tags():
    assert strip_html("&lt;script&gt;alert(1)&lt;/script&gt; ok") == "alert(1) ok"
    assert strip_html("&amp;lt;img src=x onerror=alert(1)&amp;gt;") == ""
    assert strip_html("<<b>script>x") == "x"
    assert "<img" not in strip_html("tail <img src=x onerror=alert(1)")
    assert strip_html("if a < b and c > d") == "if a < b and c > d"
    assert strip_html('<span style="color:red">Hi</span> &amp; bye') == "Hi & bye"


def test_markdown_export_is_inert_in_any_commonmark_viewer(tmp_path):
    history = HistoryManager(tmp_path / "sessions.sqlite3")
    source = Source(n=1, chunk_id="c", doc_id="d", title=f"Report ![t]({URL}/title.png)",
                    filename="x_![n](n.png).md", page=1, text="", quote=f"quote <img src={URL}/q.png> [r]: {URL}",
                    start=0, end=0, score=1.0, cited=True)
    turn = Turn(question=f"What? ![q]({URL}/q.png)", standalone_question=f"<b>What</b> {URL}",
                answer=f"**Answer** ![a [b] c]({URL}/a.png) &lt;script&gt; [1]\n[r]: {URL}/r.png",
                mode="llm", model="`gpt` ![m](m.png)", sources=[source])
    history.add_turn("s1", turn)
    history.rename("s1", f"Title ![t]({URL}/session.png)")
    try:
        markdown = history.export_markdown("s1")
        exported = json.loads(history.export_json("s1"))
    finally:
        history.close()
    assert_inert_for_viewers(markdown, ANSWER_TAGS | {"h1", "h2"})
    rendered, _ = parse(markdown)
    seen = visible(rendered)
    assert f"Title ![t]({URL}/session.png)" in seen and "x_![n](n.png).md" in seen
    assert f"![a [b] c]({URL}/a.png) &lt;script&gt; [1]" in seen
    assert exported["turns"][0]["answer"] == turn.answer, "JSON keeps the data as stored"


def test_highlight_marks_whole_question_words_in_both_languages(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))  # the app's helpers live next to its pages
    from pages._widgets import highlight_markdown

    assert match_spans("The company was founded in 2011.", "Who founded it?") == [(16, 23)]
    assert highlight_markdown("青松茶园位于福建省", "青松茶园在哪里？").startswith(":orange-background[青松茶园]")
    assert highlight_markdown("![x](http://e/p.png) founded", "founded") == (
        "\\!\\[x\\]\\(http\\:\u2060//e/p.png\\) :orange-background[founded]")
    assert match_spans("anything", "？？") == []


def test_highlight_finds_a_code_or_word_written_inside_chinese_text():
    """Chinese puts no space around a Latin code ("型号为BC-X300，"): the code is still marked,
    and the mark stops where the code does, not at the next Chinese character."""
    text = "公司的旗舰产品型号为BC-X300采用v2.1版本固件。"
    assert [text[a:b] for a, b in match_spans(text, "BC-X300")] == ["BC-X300"]
    assert [text[a:b] for a, b in match_spans(text, "v2.1")] == ["v2.1"]
    assert match_spans("the ABC-X300 unit", "BC-X300") == [], "never inside a longer Latin word"


def test_a_source_marks_the_answer_the_question_asks_for_not_only_its_words(monkeypatch):
    """Who → the name, when → the date, how many → the number: marked in bold on green, apart
    from the question's own words (orange); a search box's words never get the answer mark."""
    monkeypatch.syspath_prepend(str(REPO))
    from pages._widgets import highlight_markdown, quote_markdown

    who = highlight_markdown("Skerry Point Lighthouse was designed by engineer Margaret Doyle.",
                             "Who designed Skerry Point Lighthouse?", answer=True)
    assert ":green-background[**Margaret Doyle**]" in who
    assert ":orange-background[Skerry Point Lighthouse]" in who
    lit = highlight_markdown("It was designed by Margaret Doyle and first lit on 2 November 1874.",
                             "Who designed it?", answer=True)
    assert "Doyle**]" in lit and "November**" not in lit, "a month is no one's name"
    when = quote_markdown("The station was opened on 14 March 1998. … The station has 23 staff.",
                          "When was the station opened?", answer=True)
    assert ":green-background[**14 March 1998**]" in when
    assert "23**" not in when, "only the sentence that answers gets the mark, not every number near it"
    pdf = quote_markdown("The observatory is led by Dr.\nAmelia Hart, who came in 2015.", "Who leads the observatory?",
                         answer=True)
    assert pdf.endswith("[**Dr\\.**]  \n> :green-background[**Amelia Hart**], who came in 2015\\."), pdf
    director = quote_markdown("Halcyon Station is a base on Jan Mayen. Its director is Dr.\nIngrid Solberg.",
                              "Who is the director of Halcyon Station?", answer=True, topic="Halcyon Station Review")
    assert "[**Ingrid Solberg**]" in director and "[**Jan Mayen**]" not in director, (
        "the sentence that answers is the one with the asked word (director), not the title's words")
    where = quote_markdown("It is led by Dr.\nAmelia Hart, who came from the Naval Observatory in 2015.",
                           "Where did Amelia Hart work before?", answer=True)
    assert "[**Naval Observatory**]" in where and "[**Dr" not in where, "a title alone is not a place"
    unrelated = quote_markdown("Its director is Dr. Ingrid Solberg.", "Who leads Marlow Observatory?", answer=True)
    assert "green-background" not in unrelated, "a passage sharing no word with the question answers nothing"
    parts = highlight_markdown("The depot is run by Mr. Paolo Ricci. … Routine checks cover the depot.",
                               "Who runs the depot?", answer=True)
    assert "[**Mr\\. Paolo Ricci**]" in parts and "**Routine" not in parts, "a quoted part opens a sentence"
    crane = highlight_markdown("Crane 7 lifts 40 tonnes under rule CR-550.", "How much does Crane 7 lift?", answer=True)
    assert "[**40**] tonnes" in crane and "**550" not in crane, "a code's digits are not the number asked for"
    zh = highlight_markdown("青岚茶园创建于1986年，面积约为320亩。", "青岚茶园是哪一年创建的？", answer=True)
    assert ":green-background[**1986年**]" in zh
    assert "green-background" not in highlight_markdown("opened on 14 March 1998", "when opened")


def test_the_answer_span_is_found_by_the_library_without_streamlit():
    """ragkit.answering.marks tells where a cited passage answers; the page only paints it."""
    from ragkit.answering.marks import answer_spans

    text = "Halcyon Station is a base on Jan Mayen. Its director is Dr. Ingrid Solberg."
    spans = answer_spans(text, "Who is the director of Halcyon Station?", topic="Halcyon Station Review")
    assert [text[a:b] for a, b in spans] == ["Dr. Ingrid Solberg"]
    assert answer_spans(text, "Who leads Marlow Observatory?") == []



def test_a_heading_or_another_table_row_is_never_marked_as_the_answer():
    """A passage opens with its section's headings; a table row is a sentence of its own."""
    from ragkit.answering.marks import answer_spans

    text = "## Staff\nThe director is Dr. Ingrid Solberg."
    assert [text[a:b] for a, b in answer_spans(text, "Who is the director?")] == ["Dr. Ingrid Solberg"]
    table = "Name | Year | Staff\nNorth Station | 1990 | 12\nSouth Station | 2001 | 30"
    assert [table[a:b] for a, b in answer_spans(table, "When did North Station open?")] == ["1990"]
    staff = "Halcyon Station on Jan Mayen has 23 permanent staff and up to 40 in summer."
    assert [staff[a:b] for a, b in answer_spans(staff, "How many staff does it have?")] == ["23", "40"], (
        "a month (Jan) or a season is no count")
    opened = "The station was opened on 14 March 1998 with 23 staff; breakfast is served from 06:00."
    assert [opened[a:b] for a, b in answer_spans(opened, "When was the station opened?")] == [
        "14 March", "1998", "06:00"], "a count is no date"  # (the page joins spans a space apart)
    wrapped = "The observatory is led by Dr.\nAmelia Hart, who came in 2015."
    assert [wrapped[a:b] for a, b in answer_spans(wrapped, "Who leads the observatory?")] == ["Dr.\nAmelia Hart"]


def test_a_who_question_marks_people_not_the_institutions_beside_them():
    """"Who" is answered by a person: a college, a church or a station named beside them is not marked."""
    from ragkit.answering.marks import answer_spans

    text = "The choir was founded by Melius Christiansen at St. Olaf College."
    assert [text[a:b] for a, b in answer_spans(text, "Who founded the choir?")] == ["Melius Christiansen"]


def test_the_library_never_writes_streamlit_markup():
    assert not (REPO / "ragkit" / "webapp.py").exists()
    for path in (REPO / "ragkit").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+streamlit\b", source, re.MULTILINE), path
        assert not re.search(r":(orange|red|blue|green|violet|gray|grey|rainbow|primary)(-background)?\[|:material/",
                             source), path
