"""bench --peer: ragkit and the usual LangChain stack, each in a new process on the same
files, report the same figures, the CPU time of their ingest beside its wall time."""

import json

import pytest

from ragkit_dev.peer import measure_peer


def squad_set(path, passages):
    """A SQuAD-format set: one question per passage, answered by its first word."""
    paragraphs = [{"context": text, "qas": [{"id": str(n), "question": question,
                                              "answers": [{"text": text.split()[0], "answer_start": 0}]}]}
                  for n, (text, question) in enumerate(passages)]
    path.write_text(json.dumps({"data": [{"title": "tiny", "paragraphs": paragraphs}]}), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_both_sides_report_the_wall_and_cpu_time_of_their_first_ingest(tmp_path):
    sets = [squad_set(tmp_path / "tiny.json", [
        ("Lighthouses guide ships along the rocky coast at night.", "What guides ships at night?"),
        ("Saffron is harvested by hand from crocus flowers each autumn.", "How is saffron harvested?")])]
    figures = measure_peer(sets)
    assert figures["peer_files"] == 2 and figures["peer_questions"] == 2
    for side in ("ragkit", "peer"):
        assert figures[f"{side}_ingest_s"] > 0 and figures[f"{side}_ingest_cpu_s"] > 0
        assert figures[f"{side}_hit_at_5"] == 1.0


def recorded_sides(monkeypatch) -> dict:
    """Each side's environment, by data dir name; the sides themselves are not run."""
    import ragkit_dev.peer as peer

    environments = {}

    def run_side(script, files, questions, data_dir, env=None):  # the subprocess is the edge: record what it gets
        environments[data_dir.name] = env
        return {"questions": 1, "ingest_s": 1.0, "ingest_cpu_s": 1.0, "chunks": 1, "search_p50_ms": 1.0,
                "search_p95_ms": 1.0, "hit_at_1": 1.0, "hit_at_5": 1.0}

    monkeypatch.setattr(peer, "run_side", run_side)
    return environments


def test_ragkit_runs_on_the_configured_embedding_backend_and_nothing_else_of_this_process(tmp_path, monkeypatch):
    import ragkit_dev.peer as peer

    environments = recorded_sides(monkeypatch)
    monkeypatch.setenv("RAGKIT_TOP_K", "3")
    sets = [squad_set(tmp_path / "tiny.json", [("Saffron is harvested by hand.", "How is saffron harvested?")])]
    figures = peer.measure_peer(sets, embedding_backend="onnx-int8")
    assert figures["ragkit_embedding_backend"] == "onnx-int8"
    assert environments["ragkit"]["RAGKIT_EMBEDDING_BACKEND"] == "onnx-int8"
    assert "RAGKIT_TOP_K" not in environments["ragkit"]
    assert not any(key.startswith("RAGKIT_") for key in environments["peer"])


def test_by_default_ragkit_runs_as_a_new_store_does_on_int8(tmp_path, monkeypatch):
    import ragkit_dev.peer as peer

    environments = recorded_sides(monkeypatch)
    sets = [squad_set(tmp_path / "tiny.json", [("Saffron is harvested by hand.", "How is saffron harvested?")])]
    figures = peer.measure_peer(sets)
    assert environments["ragkit"]["RAGKIT_EMBEDDING_BACKEND"] == "auto"
    assert figures["ragkit_embedding_backend"] == "onnx-int8"
