"""Document text and model output are rendered as inert Markdown."""

from ragkit.render import escape_markdown, highlight_markdown, match_spans, safe_answer_markdown


def test_document_text_cannot_inject_markup_links_or_images():
    hostile = "<script>alert(1)</script> ![x](http://evil/p.png) [a](javascript:x) **bold** $x^2$ :red[hi]"
    escaped = escape_markdown(hostile)
    import re

    assert re.search(r"(?<!\\)[<>\[\]()*$:!]", escaped) is None, "every control character is escaped"
    assert escaped.replace("\\", "") == hostile


def test_answer_keeps_markers_and_emphasis_but_drops_html_images_and_links():
    answer = 'Revenue grew **18%** [1]. <img src=x onerror=alert(1)> ![p](http://e/p.png) see [site](http://e) $5 [2]'
    safe = safe_answer_markdown(answer)
    assert "**18%**" in safe and "[1]" in safe and "[2]" in safe
    assert "<img" not in safe and "http://e/p.png" not in safe and "(http://e)" not in safe
    assert "\\$5" in safe


def test_highlight_marks_whole_question_words_in_both_languages():
    assert match_spans("The company was founded in 2011.", "Who founded it?") == [(16, 23)]
    assert highlight_markdown("青松茶园位于福建省", "青松茶园在哪里？").startswith(":orange-background[青松茶园]")
    assert match_spans("anything", "？？") == []
