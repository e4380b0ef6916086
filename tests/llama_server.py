"""llama.cpp's OpenAI-compatible server (llama_cpp.server), run as ``python -m llama_cpp.server``
with the same arguments, plus two lines on stderr that tests/test_real_llm.py reads:

- llama.cpp's own timings for a generation that ended early: the server prints them only
  when a generation runs to its end, so a request the client hung up on (the answer's token
  limit, an abandoned structured call) or that a newer request interrupted left no trace of
  the model's work in the log; now it is there, in llama.cpp's words (a generation closed
  only after a newer one started is left out: never counted twice, at worst too little);
- ``structured request: <type>`` for every request asking for a response format that the
  server takes (a refused one is a 500 in the access log).
"""

from __future__ import annotations

import sys

import llama_cpp
from llama_cpp.server.__main__ import main

STRUCTURED_MARK = "structured request: "


def _create_completion(original):
    def create(self, *args, **kwargs):
        generation = original(self, *args, **kwargs)
        this = object()
        self._latest_generation = this  # runs with the generation's start (llama.cpp resets its timings then)
        finish = None
        try:
            for chunk in generation:
                finish = (chunk.get("choices") or [{}])[0].get("finish_reason") or finish
                yield chunk
        finally:
            generation.close()
            # Ended early, llama.cpp printed nothing: print its timings, unless a newer generation
            # started meanwhile (they are its timings now; this one's work then goes uncounted).
            if finish is None and self.verbose and self._latest_generation is this:
                self._ctx.print_timings()
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
