"""Section paths: each passage keeps the headings it stands under ("Handbook > Safety >
Fire exits"; a passage never runs from one section into the next), from real Markdown and
DOCX files through the real store to the hit, the numbered source, the exported conversation
and a repaired catalog; stores from before keep working."""

from __future__ import annotations

from conftest import FIXTURES, add_old_document
from ragkit.answering.citations import sources_from_hits
from ragkit.types import section_trail


def _section(title: str, level: int, sentences: list[str]) -> str:
    return f"{'#' * level} {title}\n\n" + "\n\n".join(sentences) + "\n\n"


# Sections long enough to be passages of their own (passages hold about 256 tokens).
HANDBOOK_MD = (
    _section("Staff Handbook", 1, [
        "Welcome to the Lantern Works staff handbook, which every new colleague reads on the first day.",
        "It explains how the workshop runs, who to ask for help, and what the company expects of you.",
        "The handbook is updated every spring by the people team, and the latest copy is on the intranet."])
    + _section("Safety", 2, [
        "Everyone takes the safety walk with a supervisor during the first week at the workshop.",
        "Protective glasses are worn at every bench where glass is cut, ground or polished.",
        "Report any accident, however small, to your supervisor on the same day it happens."])
    + _section("Fire exits", 3, [
        "The fire exits are at the north stairwell and beside the loading bay on the ground floor.",
        "Keep every fire exit clear at all times; pallets, trolleys and boxes are never left in front of them.",
        "The exit doors open outwards with a push bar and are tested by the facilities team each Monday.",
        "In a fire alarm, leave by the nearest exit and gather at the assembly point in the car park.",
        "Wardens in yellow vests count everyone at the assembly point and report to the fire service.",
        "Never use the goods lift during an alarm, and never go back inside until a warden says so.",
        "Visitors are escorted out by the colleague who signed them in at reception that morning.",
        "Fire drills are held twice a year, once in spring and once in autumn, without warning."])
    + _section("First aid", 3, [
        "The first aid kit hangs beside the kitchen door and is checked by Marta Quist every month.",
        "Marta Quist is the trained first aider; her deputy is Tomas Berg in the packing room.",
        "Burns from hot glass are cooled under running water for twenty minutes before anything else.",
        "Every treatment given is written in the accident book kept in the office drawer.",
        "An ambulance is called at once for any injury to the eyes or the head, however small.",
        "The defibrillator is mounted on the wall of the reception area next to the visitor book.",
        "First aid training is paid by the company and refreshed every three years."])
    + _section("Pay", 2, [
        "Salaries are paid by bank transfer on the last working day of each month.",
        "Payslips are sent by email two days before the payment reaches your account.",
        "Overtime is paid at one and a half times the normal hourly rate in the following month.",
        "Questions about pay go to the payroll office, open on weekday mornings from nine to twelve.",
        "Expenses are claimed on the expenses form within thirty days of the purchase."])
)


def test_a_markdown_passage_carries_the_headings_it_stands_under(kb):
    kb.ingest(HANDBOOK_MD.encode(), filename="handbook.md")
    hit = kb.search("Where are the fire exits?", k=1)[0]
    assert "north stairwell" in hit.text
    assert hit.section == "Staff Handbook > Safety > Fire exits"
    assert hit.to_dict()["section"] == hit.section
    welcome = kb.search("Who updates the staff handbook every spring?", k=1)[0]
    assert "people team" in welcome.text and welcome.section == "Staff Handbook"
    source = sources_from_hits([hit])[0]
    assert source.section_trail == "Staff Handbook › Safety › Fire exits"


def test_a_docx_table_row_carries_its_heading(kb):
    kb.ingest(FIXTURES / "handbook.docx")
    hit = kb.search("How much do the nebula noodles cost?", k=1)[0]
    assert "Nebula noodles" in hit.text
    assert hit.section == "Orbital Kitchen handbook > Opening hours"  # the heading the table is under


HALCYON_MD = """# Halcyon Station Annual Review

## Overview

Halcyon Station is a research base on Jan Mayen. Its director is Dr.
Ingrid Solberg, who joined in 2019.

## Equipment

The main radar (serial code HX-4471-QZ) was upgraded to firmware v2.1 in 2024.

## Staff

The station has 23 permanent staff and up to 40 in summer.
"""


def test_a_short_file_with_sections_is_a_passage_per_section_named_by_its_heading():
    """Before, the whole small file was one passage under its title, so the source panel
    named no section, and a passage found for "staff" quoted the overview first."""
    from ragkit.ingest.chunking import chunk_pages, section_paths

    chunks = chunk_pages([HALCYON_MD], max_tokens=256, overlap_tokens=48)
    assert section_paths([HALCYON_MD], chunks) == ["Halcyon Station Annual Review > Overview",
                                                   "Halcyon Station Annual Review > Equipment",
                                                   "Halcyon Station Annual Review > Staff"]
    assert chunks[0].text.startswith("# Halcyon Station Annual Review\n\n## Overview")  # headings stay together
    assert "Ingrid Solberg" not in chunks[1].text, "no overlap is carried across a heading"


def test_a_heading_is_one_sentence_whatever_marks_it_holds():
    from ragkit.lang.text import split_sentences

    text = "## 1. Introduction\nThe survey began in May. It ended in June.\n## 第一章 总则。\n正文。"
    assert [s.text for s in split_sentences(text)] == [
        "## 1. Introduction", "The survey began in May.", "It ended in June.", "## 第一章 总则。", "正文。"]


ORION_MD = """# Orion Bridge Project

## History

The Orion Bridge was completed in 2011 by chief engineer Hana Kowalczyk. It spans the Vell River.

## Dimensions

The main span is 412 metres long. The towers rise 96 metres above the water.
"""
SKERRY_MD = """# Skerry Point Lighthouse

The tower is 38 metres tall and built from granite. Its lamp can be seen 22 nautical miles away.
"""


def test_a_section_that_never_repeats_its_documents_name_still_answers_a_question_naming_it(settings, kb):
    """The grade reads a passage with its document's title and section path: the Dimensions
    passage answers "How tall are the Orion Bridge towers?" (it said "not found" once passages
    followed sections, as no sentence of that section names the bridge)."""
    from ragkit.app.engine import ChatEngine

    assert kb.ingest(ORION_MD.encode(), filename="orion.md").ok
    assert kb.ingest(SKERRY_MD.encode(), filename="skerry.md").ok  # "tall", of another tower
    turn = ChatEngine(settings, kb).ask("o", "How tall are the Orion Bridge towers?")
    assert turn.found and "96 metres" in turn.answer, turn.answer


def test_a_source_quote_leaves_its_headings_to_the_section_path_and_joins_wrapped_lines():
    """What "Closest matches" shows of a passage: no "# Review" / "## Overview" lines (the
    section path above the quote names them), no hard break after "Dr.", table rows kept."""
    from ragkit.lang.text import readable_passage

    passage = "# Review\n\n## Overview\n\nIts director is Dr.\nIngrid Solberg.\nName | Year\nNorth | 1990"
    assert readable_passage(passage) == "Its director is Dr. Ingrid Solberg.\nName | Year\nNorth | 1990"


def test_a_plain_text_file_has_no_section(kb):
    kb.ingest(b"The harbour crane lifts forty tonnes.", filename="crane.txt")
    hit = kb.search("harbour crane", k=1)[0]
    assert hit.section == "" and sources_from_hits([hit])[0].section_trail == ""


def test_the_section_is_stored_with_the_vector_so_a_lost_catalog_gets_it_back(kb):
    from ragkit.store.integrity import documents_from_vectors, vectors_by_document

    result = kb.ingest(HANDBOOK_MD.encode(), filename="handbook.md")
    grouped = vectors_by_document(kb.indexer.store, {result.document.id})
    _, passages = documents_from_vectors(grouped[result.document.id])
    stored = kb.indexer.catalog.passages_of(result.document.id)
    assert [p.section for p in passages] == [p.section for p in stored]
    assert any(p.section == "Staff Handbook > Safety > Fire exits" for p in passages)


def test_a_catalog_from_before_section_paths_is_migrated_and_its_passages_have_none(tmp_path):
    from ragkit.store.catalog import MIGRATIONS, Catalog, _passage_sections
    from ragkit.store.db import apply_migrations, open_database

    assert MIGRATIONS[5] is _passage_sections  # version 6: appended, never an edit of an applied one
    path = tmp_path / "registry.sqlite3"
    apply_migrations(open_database(path), "catalog", MIGRATIONS[:5])
    add_old_document(path)
    catalog = Catalog(path)
    try:
        [passage] = catalog.passages_of("old1")
        assert passage.text == "Old passage." and passage.section == ""
    finally:
        catalog.close()


def test_the_exported_conversation_names_each_sources_section(settings, kb):
    from ragkit.app.engine import ChatEngine

    kb.ingest(HANDBOOK_MD.encode(), filename="handbook.md")
    engine = ChatEngine(settings, kb)
    turn = engine.ask("s1", "Where are the fire exits?")
    assert any(s.section_trail == "Staff Handbook › Safety › Fire exits" for s in turn.sources)
    exported = engine.history.export_markdown("s1")
    assert "Staff Handbook › Safety › Fire exits" in exported


def test_the_trail_drops_empty_parts():
    assert section_trail("A > B > C") == "A › B › C"
    assert section_trail("") == ""
