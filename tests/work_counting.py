"""Measuring work for the linear-time tests: operations counted, not wall time."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import ragkit

RAGKIT_DIR = str(Path(ragkit.__file__).parent) + os.sep


def count_operations(fn, *args) -> int:
    """Python lines executed inside ragkit/ while ``fn(*args)`` runs (deterministic)."""
    count = 0

    def on_line(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return on_line

    def on_call(frame, event, arg):
        return on_line if frame.f_code.co_filename.startswith(RAGKIT_DIR) else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        fn(*args)
    finally:
        sys.settrace(previous)
    return count


def cpu_seconds(fn, arg, repeats: int = 3) -> float:
    """Least CPU time of ``repeats`` runs (the least disturbed one): only for work done in
    C (regexes, tokenizers) that no line counter sees."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn(arg)
        best = min(best, time.process_time() - start)
    return best
