"""The modules compiled with mypyc: one list, read by setup.py and by `mnemo --version`.

Sorted.  Modules NOT compiled, and why:
  mnemo/__init__.py         re-exports only; nothing runs there
  mnemo/__main__.py         `python -m mnemo` entry; mypyc cannot compile `if __name__ == ...`
  mnemo/_hot.py             this list; setup.py reads it before anything is built
  mnemo/_unicode_tables.py  generated data only; pretokenize copies its tables into its own
                            `Final` statics once at import, so compiling it would buy nothing
  mnemo/batches.py          numpy does the work; mypyc would only add a compile step
  mnemo/bigram.py           numpy does the work; mypyc would only add a compile step
  mnemo/buildinfo.py        reports on the build itself; must work whatever got compiled
  mnemo/chat.py             a loop over a conversation's messages around the compiled encoder
  mnemo/cli.py              argument parsing and printing; plain Python keeps tracebacks readable
  mnemo/constants.py        shared names and limits only
  mnemo/demo.py             `mnemo demo`: calls the library in order and prints
  mnemo/errors.py           exception classes users catch and subclass; nothing hot
  mnemo/fileio.py           atomic writes and bounded reads, once per file
  mnemo/interop.py          other tools' files (GPT-2, tiktoken, tokenizer.json): JSON/base64
                            parsing and checks once per file; encode_iterable only cuts text and
                            hands it to the compiled encoder and pre-tokenizer
  mnemo/parallel.py         the worker start method and progress type; nothing hot
  mnemo/reference.py        the naive twins: the oracle the compiled code is tested against
                            stays plain Python, so it cannot share a compiler bug with it
  mnemo/sources.py          file reading and planning, done by C libraries (lzma, pyarrow, json for
                            the lines the fast path declines); the hot part, the text field of
                            each JSON line, moved to the compiled mnemo/jsonfield.py
  mnemo/stackfiles.py       training stacks' token files: numpy writes whole blocks and memory-maps
                            the files; nothing runs per token in Python
  mnemo/tokenizer.py        policy (validation, special tokens, errors) around the compiled encoder
  mnemo/tokenizing.py       process orchestration and file I/O around the compiled encoder
  mnemo/tokfile.py          .tok: struct/numpy parsing of a header, numpy writes whole blocks
  mnemo/tokshow.py          formats tokens for a terminal, a few hundred at a time
  mnemo/training.py         process orchestration around the compiled counter and trainer
  mnemo/vocabfile.py        tokenizer.bin: struct/numpy parsing of a whole file, once per file
"""

from typing import Final

HOT_MODULES: Final = [
    "mnemo/count.py",
    "mnemo/encode_chunk.py",
    "mnemo/encode_text.py",
    "mnemo/idmap.py",
    "mnemo/jsonfield.py",
    "mnemo/kernels.py",
    "mnemo/merge_loop.py",
    "mnemo/merge_loop_wide.py",
    "mnemo/pretokenize.py",
]
