"""The support check: a sentence is supported when its passage states every name, figure,
date and place in it (normalised) and most of its claim words."""

import json

import pytest

from ragkit.answering.support import months, quantities, supports
from ragkit_dev.support_eval import restate, support_cases, support_metrics, to_chinese_numerals

LUMEN = ("Northwind Lumen Ltd. makes desk lamps. It was founded in 2011 by Ana Ortiz in Porto. "
         "The Lumen X1 costs 349 US dollars, weighs 4.2 kg and comes with a 3-year warranty. "
         "The company has offices in Porto and Berlin.")


@pytest.mark.parametrize("sentence", [
    "The warranty lasts 3 years.",
    "The Lumen X1 costs $349.00.",
    "It weighs 4,2 kg.",
    "Northwind Lumen was founded by Ana Ortiz in 2011.",
    "The warranty lasts three years.",
])
def test_a_restated_fact_is_supported(sentence):
    assert supports(LUMEN, sentence).supported, supports(LUMEN, sentence).reason


@pytest.mark.parametrize("sentence, named", [
    ("Northwind Lumen was founded by Tomas Eller in Riga.", "Tomas"),
    ("The Lumen X1 costs $399.", "399"),
    ("The Lumen X1 costs 349 euros.", "349"),
    ("The warranty lasts 3 months.", "3"),
    ("It was founded in March 2011.", "March"),
    ("The company has offices in London, Berlin, Paris, New York City, and Lisbon.", "London"),
])
def test_a_changed_name_figure_date_or_place_is_not_supported(sentence, named):
    verdict = supports(LUMEN, sentence)
    assert not verdict.supported
    assert named.lower() in verdict.reason.lower()


def test_half_the_words_and_the_figures_are_not_support():
    passage = "The cartridge filters 300 litres and is made in Porto from recycled plastic by the factory."
    verdict = supports(passage, "The cartridge must be replaced every week by a technician after 300 litres.")
    assert not verdict.supported
    assert "claim words" in verdict.reason


ZH = "该公司2019年营收3.6亿元人民币，由盛大游戏运营，电池保修三年，百分之三十的用户来自上海。"


@pytest.mark.parametrize("sentence", [
    "公司2019年营收3亿6000万元。", "公司营收360000000元。", "电池保修3年。", "30%的用户来自上海。",
    "该公司由盛大游戏运营。",
])
def test_chinese_figures_are_compared_normalised(sentence):
    assert supports(ZH, sentence).supported, supports(ZH, sentence).reason


@pytest.mark.parametrize("sentence", ["公司2019年营收1.5亿元人民币。", "该公司由腾讯运营。", "电池保修3个月。",
                                      "百分之四十的用户来自上海。"])
def test_a_changed_chinese_figure_or_name_is_not_supported(sentence):
    assert not supports(ZH, sentence).supported


def test_numbers_are_read_in_every_notation():
    assert [q.value for q in quantities("3.6亿")] == [360_000_000]
    assert [q.value for q in quantities("三亿六千万")] == [360_000_000]
    assert [q.value for q in quantities("1,500 and 1,5")] == [1500, 1.5]
    assert [(q.value, q.unit) for q in quantities("a 3-year warranty")] == [(3, "year")]
    assert [(q.value, q.unit) for q in quantities("$3.5 million")] == [(3_500_000, "usd")]
    assert [q.value for q in quantities("一九九〇年")] == [1990]
    assert quantities("他们一起统一了标准") == []
    assert months("March 3") == months("3月3日") == {3}
    assert to_chinese_numerals(2011) == "二千零一十一" and to_chinese_numerals(36) == "三十六"


def test_restating_keeps_the_value():
    assert restate("a 3-year plan costing $1,500", "en") == "a 3 years plan costing 1500 US dollars"
    assert restate("有36名学生，占30%", "zh") == "有三十六名学生，占百分之三十"


def test_the_labelled_set_is_reproducible_and_measured(tmp_path):
    squad = {"data": [{"title": "t", "paragraphs": [
        {"context": "The library was built in 1879. It holds 3,000 books.",
         "qas": [{"question": "When was the library built?", "answers": [{"text": "1879", "answer_start": 25}]},
                 {"question": "How many books does it hold?", "answers": [{"text": "3,000", "answer_start": 43}]}]},
        {"context": "The bridge opened in 1932 and has 12 arches.",
         "qas": [{"question": "When did the bridge open?", "answers": [{"text": "1932", "answer_start": 21}]},
                 {"question": "How many arches does it have?", "answers": [{"text": "12", "answer_start": 34}]}]},
    ]}]}
    path = tmp_path / "set.json"
    path.write_text(json.dumps(squad))
    cases = support_cases(path)
    assert cases == support_cases(path)
    kinds = {(c.kind, c.supported) for c in cases}
    assert {("gold", True), ("swapped", False), ("restated", True)} <= kinds
    swapped = [c for c in cases if c.kind == "swapped"]
    assert any("1932" in c.sentence or "12" in c.sentence for c in swapped if "library" in c.sentence)
    metrics = support_metrics(cases)
    assert metrics["en_precision"] == 1.0 and metrics["en_recall"] == 1.0
