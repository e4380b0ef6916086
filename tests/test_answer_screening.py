"""Pure logic of generated answers: does a reply answer, which sentences are shown, the
turn's model budget, the usability memory and the context fitting."""

import json
import time

import pytest

from ragkit.answering.answer_fit import UNSAID, answer_problem, asked_kind, unsaid_asked
from ragkit.answering.checks import answer_sentences
from ragkit.answering.screening import ScreenedAnswer
from ragkit.config import Settings
from ragkit.models.budget import TurnBudget
from ragkit.models.chat import ModelChoice
from ragkit.models.fitting import fit_prompt, overflow_message, split_footer, with_footer
from ragkit.models.judge_memory import FORMATS, GIVE_UP_AFTER, JSON_OBJECT, JSON_SCHEMA, JudgeMemory
from ragkit.types import Source


def source(n: int, title: str, text: str) -> Source:
    return Source(n=n, chunk_id=f"c{n}", doc_id=f"d{n}", title=title, filename=title, page=1, text=text, quote=text,
                  start=0, end=len(text), score=1.0)


SOURCE = source(1, "lumen.md", "Northwind Lumen was founded in 2011 by Ana Ortiz in Porto. "
                "The filter cartridge should be replaced every 6 months. The battery warranty is 3 years.")
ZH_SOURCE = source(1, "电池.md", "电池保修三年。滤芯每六个月更换一次。")


@pytest.mark.parametrize("reply, question, problem", [
    ("电池保修多久？[1]", "电池保修多久？", "it only repeats the question"),
    ("Northwind Lumen Ltd.[1]", "Who founded Northwind Lumen?", "it only restates the question's subject"),
    ("It costs 349 US dollars and weighs 4.2 kg.[1]", "How often should the cartridge be replaced?",
     "it does not say a frequency, which the question asks for"),
    ("The company makes lamps in Porto.[1]", "When was Northwind Lumen founded?",
     "it does not say a date, which the question asks for"),
    ("Northwind Lumen was founded by Ana Ortiz.[1]", "Who founded Northwind Lumen?", ""),
    ("Replace it every 6 months.[1]", "How often should the cartridge be replaced?", ""),
    ("电池保修三年。[1]", "电池保修多久？", ""),
    ("滤芯每六个月更换一次。[1]", "滤芯多久更换一次？", ""),
])
def test_a_reply_answers_only_when_it_says_something_of_the_kind_asked(reply, question, problem):
    assert answer_problem(reply, question) == problem


def test_how_often_asks_for_a_frequency():
    assert asked_kind("How often should I replace it?") == "frequency"
    assert asked_kind("滤芯多久更换一次？") == "frequency"
    assert asked_kind("Who founded it?") == "person"


def test_sentences_keep_the_markers_written_after_them():
    sentences, rest = answer_sentences("It was 2011.[1] It is in Porto [1]. 电池保修三年。[1]And then")
    assert sentences == ["It was 2011.[1]", " It is in Porto [1].", " 电池保修三年。[1]"]
    assert rest == "And then"


def screen(pieces, question, sources=(SOURCE,), cut_off=False):
    shown_events = []
    screened = ScreenedAnswer(shown_events.append, list(sources), (question,))
    for piece in pieces:
        screened({"type": "token", "text": piece})
    screened.finish(cut_off)
    return screened, [e["text"] for e in shown_events if e["type"] == "token"]


def test_each_sentence_is_shown_only_after_it_passes():
    text = ("Northwind Lumen was founded by Ana Ortiz [1]. It has offices in London and Lisbon [1]. "
            "It was founded in 2011 [1]. It was founded in")
    screened, shown = screen([text[i:i + 5] for i in range(0, len(text), 5)], "Who founded Northwind Lumen?",
                             cut_off=True)
    assert shown == ["Northwind Lumen was founded by Ana Ortiz [1].", " It was founded in 2011 [1]."]
    assert [w.reason for w in screened.withheld] == ["the name London is not in the source",
                                                    "cut off at the answer's token limit"]
    assert screened.answered


def test_sentences_before_the_answer_wait_for_it_and_an_echo_is_never_shown():
    _, shown = screen(["How often should the filter cartridge be replaced? [1] ",
                       "The battery warranty is 3 years [1]. ", "The filter cartridge should be replaced every "
                       "6 months [1]."], "How often should the filter cartridge be replaced?")
    assert shown == ["The battery warranty is 3 years [1].", " The filter cartridge should be replaced every 6 "
                     "months [1]."]


def test_a_reply_that_never_answers_shows_nothing_and_says_why():
    screened, shown = screen(["The battery warranty is 3 years [1]."], "How often should the cartridge be replaced?")
    assert shown == [] and not screened.answered
    assert screened.problem() == ("it did not answer the question: it does not say a frequency, "
                                  "which the question asks for")


def test_a_reply_that_restates_its_source_without_the_number_it_gives_never_answers():
    """A 270M model wrote "The company's dividend was approved by the board [1]" over "The board
    approved a dividend of 12 cents per share": true, and empty. The turn then falls back to
    the quoted passage, which holds the figure."""
    report = source(1, "report.pdf", "The board approved a dividend of 12 cents per share.")
    question = "What dividend did the board approve?"
    screened, shown = screen(["The company's dividend was approved by the board [1]."], question, sources=(report,))
    assert shown == [] and not screened.answered
    _, shown = screen(["The board approved a dividend of 12 cents per share [1]."], question, sources=(report,))
    assert shown == ["The board approved a dividend of 12 cents per share [1]."]


def test_prompt_debris_and_labels_are_not_shown():
    _, shown = screen(["Answer: 电池保修三年。[1]</source"], "电池保修多久？", sources=(ZH_SOURCE,))
    assert shown == ["电池保修三年。[1]"]


def test_a_wrong_figure_is_never_shown():
    screened, shown = screen(["电池保修五年。[1]"], "电池保修多久？", sources=(ZH_SOURCE,))
    assert shown == [] and "not in the source" in screened.problem()


def test_the_turn_budget_is_shared_and_allows_one_structured_call():
    budget = TurnBudget(10.0)
    assert budget.may_call_structured()
    budget.count_structured_step()
    assert not budget.may_call_structured()
    budget.spend(9.5)
    assert budget.remaining() <= 0.5


def test_unusable_structured_replies_are_remembered_until_they_expire(tmp_path):
    memory = JudgeMemory(tmp_path / "usability.json", expiry_s=3600)
    for _ in range(GIVE_UP_AFTER):
        assert memory.usable("gemma", "http://localhost:8080/v1")
        memory.record("gemma", "http://localhost:8080/v1", usable=False, why="no JSON")
    again = JudgeMemory(tmp_path / "usability.json", expiry_s=3600)  # as another process reads it
    assert not again.usable("gemma", "http://localhost:8080/v1")
    assert again.usable("gemma", "http://otherhost:8080/v1") and again.usable("qwen", "http://localhost:8080/v1")
    data = json.loads((tmp_path / "usability.json").read_text())
    data["gemma@http://localhost:8080/v1"]["since"] = time.time() - 7200
    (tmp_path / "usability.json").write_text(json.dumps(data))
    assert again.usable("gemma", "http://localhost:8080/v1")  # expired: tried again


def test_a_usable_reply_clears_the_count(tmp_path):
    memory = JudgeMemory(tmp_path / "usability.json", expiry_s=3600)
    memory.record("m", "u", usable=False)
    memory.record("m", "u", usable=True)
    memory.record("m", "u", usable=False)
    assert memory.usable("m", "u") and memory.failures("m", "u") == 1


def test_a_small_window_cuts_the_answer_budget_and_drops_passages_and_says_so(tmp_path):
    settings = Settings(data_dir=tmp_path, _env_file=None, model_context_tokens=768)
    choice = ModelChoice("m@local", "m", "m", "")
    sources = [source(n, f"doc{n}", "Lamps are made in Porto. " * 60) for n in range(1, 5)]
    fitted = fit_prompt(settings, choice, "Answer from the sources.", [], "Where are lamps made?", sources)
    assert fitted.window == 768 and fitted.answer_tokens < settings.max_answer_tokens
    assert any(note.startswith("answer budget cut from 700") for note in fitted.notes)
    assert any("passages dropped" in note for note in fitted.notes)
    assert "did not fit" in fitted.footer
    assert split_footer(with_footer("Answer [1].", fitted.footer)) == ("Answer [1].", fitted.footer)


def test_an_overflow_is_told_from_other_errors():
    class Refused(Exception):
        status_code = 400
        body = {"message": "the request exceeds the available context size, try increasing it"}

    choice = ModelChoice("m@local", "m", "m", "")
    assert overflow_message(Refused(), choice, 1900, 2048).startswith("context overflow")
    assert "probably a context overflow" in overflow_message(ValueError("No generation chunks were returned"),
                                                             choice, 1900, 2048)
    assert overflow_message(ConnectionError("refused"), choice, 1900, 2048) == ""


MENU = source(1, "menu.md", "Dish | Price\nNebula noodles | 14 credits\nComet curry | 17 credits")
REPORT = source(2, "report.pdf", "The company expects to open an office in Osaka in 2027.")
TEA = source(3, "茶园.pdf", "青松茶园位于福建省武夷山市。门票价格为六十元，学生半价。")


def test_a_true_sentence_about_something_else_is_never_shown():
    screened, shown = screen(["The company expects to open an office in Osaka in 2027 [2]. ",
                              "Comet curry costs 17 credits [1]."], "How much is the comet curry?",
                             sources=(MENU, REPORT))
    assert shown == ["Comet curry costs 17 credits [1]."]
    assert [w.reason for w in screened.withheld] == ["it is about something other than what the question asks about"]


def test_a_terse_answer_is_about_the_subject_its_source_names():
    screened, shown = screen(["17 credits [1]."], "How much is the comet curry?", sources=(MENU, REPORT))
    assert shown == ["17 credits [1]."] and screened.answered
    _, shown = screen(["六十元。[3]"], "门票多少钱？", sources=(TEA,))
    assert shown == ["六十元。[3]"]



KITCHEN = source(4, "handbook.docx", "Orbital Kitchen is a restaurant on the space station Meridian.")


def test_a_sentence_about_the_subject_but_not_what_is_asked_of_it_is_never_shown():
    # A capitalised name passes for a person, yet neither the sentence nor its source says
    # anything about a head chef: half the question's words are unsaid.
    screened, shown = screen(["Orbital Kitchen is a restaurant on the space station Meridian [4]."],
                             "Who is the head chef of Orbital Kitchen?", sources=(KITCHEN,))
    assert shown == [] and not screened.answered
    assert screened.withheld[0].reason == f"{UNSAID} (head, chef)"
    assert screened.problem() == f"it did not answer the question: {UNSAID} (head, chef)"
    _, shown = screen(["Orbital Kitchen is a restaurant on the space station Meridian [4]."],
                      "Where is Orbital Kitchen?", sources=(KITCHEN,))
    assert shown == ["Orbital Kitchen is a restaurant on the space station Meridian [4]."]


@pytest.mark.parametrize("sentence, cited, question, unsaid", [
    ("", KITCHEN.text, "Who is the head chef of Orbital Kitchen?", ["head", "chef"]),
    ("", REPORT.text, "Where does the company plan to open an office?", []),  # "plan": one word in four
    ("17 credits [1].", MENU.text, "How much is the comet curry?", []),  # "much" names the kind asked
    ("It was founded in 2011.", "Aurora Analytics annual report", "In which year was Aurora Analytics founded?",
     []),  # "year" names the kind; the title counts as said
    ("", REPORT.text, "Who founded Aurora Analytics?", ["found", "aurora", "analyt"]),
    ("", TEA.text, "青松茶园的园长是谁？", []),  # one word in three unsaid ("园长")
    ("青松茶园始建于一九八五年。", TEA.text, "青松茶园每天几点开放？", ["每天", "开放"]),  # "几点" names the kind
    ("", TEA.text, "门票多少钱？", []),
])
def test_unsaid_asked_names_what_neither_the_sentence_nor_its_sources_say(sentence, cited, question, unsaid):
    assert unsaid_asked(sentence, cited, question) == unsaid


def test_a_servers_json_mode_only_answer_is_remembered_until_it_expires(tmp_path):
    memory = JudgeMemory(tmp_path / "usability.json", expiry_s=3600)
    assert memory.json_format("gemma", "http://localhost:8080/v1") == JSON_SCHEMA
    memory.record_json_format("gemma", "http://localhost:8080/v1", JSON_OBJECT)
    memory.record("gemma", "http://localhost:8080/v1", usable=True)  # clearing failures keeps the format
    again = JudgeMemory(tmp_path / "usability.json", expiry_s=3600)  # as another process reads it
    assert again.json_format("gemma", "http://localhost:8080/v1") == JSON_OBJECT
    assert again.json_format("gemma", "http://otherhost:8080/v1") == JSON_SCHEMA
    data = json.loads((tmp_path / "usability.json").read_text())
    data[FORMATS]["gemma@http://localhost:8080/v1"]["since"] = time.time() - 7200
    (tmp_path / "usability.json").write_text(json.dumps(data))
    assert again.json_format("gemma", "http://localhost:8080/v1") == JSON_SCHEMA  # expired: the schema again
