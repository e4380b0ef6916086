"""llama.cpp's OpenAI-compatible server (llama_cpp.server), run as ``python -m llama_cpp.server``
with the same arguments, plus two lines on stderr that tests/test_real_llm.py reads:

- ``generation cut short: total time = … ms`` for a generation that ended early: llama.cpp
  prints its timings only when a generation runs to its end, so a request the client hung
  up on (the answer's token limit, an abandoned structured call) or that a newer request
  interrupted left no trace of the model's work in the log. The time is from the
  generation's start (prompt evaluation included, as in llama.cpp's total) to its last
  token, printed when it is closed or, if sooner, when the next generation starts;
- ``structured request: <type>`` for every request asking for a response format that the
  server takes (a refused one is a 500 in the access log).
"""

from __future__ import annotations

import itertools
import sys
import time

import llama_cpp
from llama_cpp.server.__main__ import main

STRUCTURED_MARK = "structured request: "


CUT_SHORT = "generation cut short: total time = {ms:.2f} ms"
_numbers = itertools.count()
_unfinished: dict[int, list[float]] = {}  # generations under way: [started, last token] (perf_counter)


def _report(key: int) -> None:
    """Print the time an unfinished generation ran, from its start to its last token, once."""
    times = _unfinished.pop(key, None)
    if times:
        print(CUT_SHORT.format(ms=(times[1] - times[0]) * 1000), file=sys.stderr, flush=True)


def _create_completion(original):
    def create(self, *args, **kwargs):
        # One generation at a time: one still under way when another starts was abandoned (the
        # client hung up, or this request interrupted it), though its generator may be closed
        # only much later, by the garbage collector.
        for key in list(_unfinished):
            _report(key)
        key, now = next(_numbers), time.perf_counter()
        _unfinished[key] = [now, now]
        generation = original(self, *args, **kwargs)
        try:
            for chunk in generation:
                if key in _unfinished:
                    _unfinished[key][1] = time.perf_counter()
                if (chunk.get("choices") or [{}])[0].get("finish_reason"):
                    _unfinished.pop(key, None)  # ran to its end: llama.cpp has printed its timings
                yield chunk
        finally:
            generation.close()
            _report(key)
    return create


def _create_chat_completion(original):
    def create(self, *args, **kwargs):
        response_format = kwargs.get("response_format")
        if response_format:
            print(f"{STRUCTURED_MARK}{response_format.get('type')}", file=sys.stderr, flush=True)
        return original(self, *args, **kwargs)
    return create


if __name__ == "__main__":
    llama_cpp.Llama._create_completion = _create_completion(llama_cpp.Llama._create_completion)
    llama_cpp.Llama.create_chat_completion = _create_chat_completion(llama_cpp.Llama.create_chat_completion)
    main()
