"""Count the stops of a walk down the house: the mnemo modules a command enters, in order.

    .venv/bin/python tools/walk.py            # train and tokenize from the CLI, a file and a URL
    .venv/bin/python tools/walk.py -v         # also print each walk, one stop a line

A *stop* is a call that crosses into a mnemo module: the callee's module is not the module of
the nearest mnemo frame above it (a call made through the standard library -- functools.partial,
a dataclass's __init__ -- is its mnemo caller's).  Each call site counts once: the second call
of a function from the same function (a loop over documents) is no new stop, while the same
helper called from ten places is ten stops -- which is what "back and forth" costs a reader.
Resuming a generator is not a call, nor is importing a module on the way.  Compiled functions are seen as C calls (mypyc exposes
them as builtins) and count as stops of their module.

The walk starts when `cmd_train` (or `cmd_tokenize`) is entered and ends at the first call into
the merge loop (training: `merge_loop`, `merge_loop_wide` or the naive `reference`) or into the
encoder (tokenizing: `encode_text` / `encode_chunk`).  The input is a small JSON Lines file
written here (deterministic): a local file, then the same bytes at a memory:// URL (fsspec's
in-process filesystem, which needs no server).  One worker: no other process runs mnemo code.

"Visits each room once on the way down" (issue 29) means every module appears in one
contiguous run of its walk: the line "entered again" lists the modules that do not.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

END_TRAIN = ("mnemo.merge_loop", "mnemo.merge_loop_wide", "mnemo.reference")
END_TOKENIZE = ("mnemo.encode_text", "mnemo.encode_chunk")
GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _module(frame: FrameType | None) -> str:
    """The frame's module; the command line's modules (mnemo/cli/, one per command) are one
    room, `mnemo.cli`, as when they were one file: the walk counts the rooms below it."""
    name = str(frame.f_globals.get("__name__", "")) if frame is not None else ""
    return "mnemo.cli" if name.startswith("mnemo.cli.") else name


def _mnemo_frame(frame: FrameType | None) -> FrameType | None:
    """The nearest frame at or above `frame` that runs mnemo code."""
    while frame is not None and not _module(frame).startswith("mnemo"):
        frame = frame.f_back
    return frame


def walk(run: Callable[[], int], start: str, ends: tuple[str, ...]) -> tuple[list[str], int]:
    """The modules entered, one entry per stop, from `start`'s call until a call into `ends`;
    and how many functions of other modules those stops entered."""
    stops: list[str] = []
    functions: set[object] = set()
    on = done = False
    started: dict[int, FrameType] = {}  # generator frames seen (held: an id is not reused while they live)
    seen: set[tuple[object, object]] = set()  # (caller's code, callee) pairs walked already

    def record(callee_key: object, callee: str, caller: FrameType | None) -> None:
        nonlocal done
        owner = _mnemo_frame(caller)
        if not callee.startswith("mnemo") or callee == _module(owner):
            return
        key = (owner.f_code if owner is not None else None, callee_key)
        if key in seen:
            return
        seen.add(key)
        functions.add(callee_key)
        stops.append(callee)
        done = callee in ends

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal on
        if done:
            return
        if event == "call":
            code = frame.f_code
            if not on:
                if code.co_name == start and _module(frame) == "mnemo.cli":
                    on = True
                    stops.append("mnemo.cli")
                return
            if code.co_name == "<module>":
                return  # a module imported on the way: not a call of the walk
            if code.co_flags & GENERATOR:
                if id(frame) in started:
                    return  # resumed, not called
                started[id(frame)] = frame
            record(code, _module(frame), frame.f_back)
        elif event == "c_call" and on:
            record(arg, str(getattr(arg, "__module__", None) or ""), frame)

    sys.setprofile(profile)
    try:
        code = run()
    finally:
        sys.setprofile(None)
    if code != 0:
        raise SystemExit(f"the walk's command exited {code}")
    return stops, len(functions)


def corpus(folder: Path) -> Path:
    """A small JSON Lines corpus: 200 documents of plain English words."""
    words = "the quick brown fox jumps over a lazy dog while seven wizards quietly hex".split()
    path = folder / "walk.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(200):
            text = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(40))
            f.write(json.dumps({"text": text}) + "\n")
    return path


def summary(name: str, stops: list[str], functions: int, verbose: bool) -> None:
    counts = collections.Counter(stops)
    runs = [m for i, m in enumerate(stops) if i == 0 or stops[i - 1] != m]
    again = [m.removeprefix("mnemo.") for m, n in collections.Counter(runs).items() if n > 1]
    top = ", ".join(f"{m.removeprefix('mnemo.')} {n}" for m, n in counts.most_common(5))
    print(f"{name:26s} {len(stops):3d} stops into {functions:2d} functions of {len(counts):2d} modules; most visited: {top}")
    print(f"{'':26s} entered again after leaving: {', '.join(sorted(again)) or 'none'}")
    if verbose:
        print("    " + " > ".join(m.removeprefix("mnemo.") for m in stops))


def main(verbose: bool) -> None:
    import fsspec

    import mnemo
    from mnemo.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = corpus(folder)
        url = "memory://walk/walk.jsonl"
        with fsspec.open(url, "wb") as f:
            f.write(data.read_bytes())
        tok = str(folder / "tok.bin")
        walks: list[tuple[str, tuple[list[str], int]]] = []
        for where, source in (("a file", str(data)), ("a memory:// URL", url)):
            train = ["train", source, "-o", tok, "--vocab-size", "400", "--workers", "1", "-q"]
            walks.append((f"train, {where}", walk(lambda: cli(train), "cmd_train", END_TRAIN)))
            tokenize = ["tokenize", source, "-t", tok, "-o", str(folder / "out.tok"), "--workers", "1", "-q"]
            walks.append((f"tokenize, {where}", walk(lambda: cli(tokenize), "cmd_tokenize", END_TOKENIZE)))
    print(f"mnemo {mnemo.__version__} from {Path(mnemo.__file__).parent}")
    for name, (stops, functions) in walks:
        summary(name, stops, functions, verbose)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="print each walk, one stop after another")
    main(parser.parse_args().verbose)
