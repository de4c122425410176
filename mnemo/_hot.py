"""The modules compiled with mypyc: one list, read by setup.py and by `mnemo --version`.

Sorted.  Modules NOT compiled, and why:
  mnemo/__init__.py         re-exports only; nothing runs there
  mnemo/__main__.py         `python -m mnemo` entry; mypyc cannot compile `if __name__ == ...`
  mnemo/_hot.py             this list; setup.py reads it before anything is built
  mnemo/_unicode_data.py    generated data only (general categories per Unicode version), read
                            once per compiled pattern by regex_family
  mnemo/_stored_programs.py generated data only: the presets' scanner programs, read once per
                            pattern by stored_programs
  mnemo/_unicode_tables.py  generated data only; pretokenize_named copies its tables into its own
                            `Final` statics once at import, so compiling it would buy nothing
  mnemo/batch_encode.py     encode_batch: checks, blocks to the work engine, one compiled call per
                            block to unpack
  mnemo/batches.py          numpy does the work; mypyc would only add a compile step
  mnemo/bigram.py           numpy does the work; mypyc would only add a compile step
  mnemo/buildinfo.py        reports on the build itself; must work whatever got compiled
  mnemo/chat.py             a loop over a conversation's messages around the compiled encoder
  mnemo/checks.py           argument checks, once per call
  mnemo/cli/__init__.py     `mnemo`'s main: signals, the error line; plain Python keeps tracebacks readable
  mnemo/cli/common.py       summaries, argument resolving and path checks, once per command
  mnemo/cli/convert.py      `mnemo convert`: calls the format modules once and prints
  mnemo/cli/evaluate.py     `mnemo inspect` and `mnemo eval`: call the library once and print
  mnemo/cli/options.py      argument types and shared options: parsing, once per run
  mnemo/cli/parser.py       builds the argument parser, once per run
  mnemo/cli/pretrain.py     `mnemo pretrain` and `mnemo demo`: call the library once and print
  mnemo/cli/show.py         `mnemo tokshow` and `mnemo info`: call the library once and print
  mnemo/cli/tokenize.py     `mnemo tokenize`: calls the library once and prints
  mnemo/cli/train.py        `mnemo train`: calls the library once and prints
  mnemo/constants.py        shared names and limits only
  mnemo/decoding.py         streaming decode: one dict lookup and Python's incremental UTF-8 decoder
                            per id, as a model produces them; nothing for mypyc to speed up
  mnemo/defaults.py         the table of defaults only
  mnemo/demo.py             `mnemo demo`: calls the library in order and prints
  mnemo/errors.py           exception classes users catch and subclass; nothing hot
  mnemo/evaluate.py         `mnemo eval`: loads tokenizers, calls the compiled encoder per document, counts
                            with numpy, prints tables and draws with matplotlib
  mnemo/extend.py           new special tokens, or the settings of a run continuing from a tokenizer
  mnemo/fileio.py           atomic writes and bounded reads, once per file
  mnemo/formats/__init__.py  a docstring only
  mnemo/formats/common.py   GPT-2's byte alphabet, the assembler, bounded reads: once per file
  mnemo/formats/cs336.py    the CS336 interface: one call to Tokenizer.from_vocab_merges
  mnemo/formats/gpt2.py     vocab.json + merges.txt: JSON parsing and checks once per file
  mnemo/formats/hf.py       tokenizer.json: JSON parsing and checks once per file
  mnemo/formats/_hf_unicode.py  generated data only (tools/gen_hf_normalize_table.py)
  mnemo/formats/hf_added.py  a tokenizer.json's added tokens: a regex search per candidate start
  mnemo/formats/hf_file.py  a tokenizer.json read once: json.loads and the compiled tokenizer_json
  mnemo/formats/hf_encoding.py  tokenizers' Encoding (offsets, masks, padding): list building
                            per text for the transformers drop-in
  mnemo/formats/hf_folder.py  an export folder: three small JSON files written once
  mnemo/formats/hf_normalize.py  NFC/NFKC: unicodedata does the work, once per text stretch
  mnemo/formats/hf_pipeline.py  policy around the compiled encoder (tokenizers' pipeline), once
                            per text; its reference pre-tokenizer is the `regex` module's
  mnemo/formats/hf_post.py  a post-processor's template, once per text
  mnemo/formats/hf_pretok.py  split steps: the compiled scanner's, or run with the `regex` module
  mnemo/formats/hf_regex.py  regex syntax rewritten once per pattern
  mnemo/formats/load.py     mnemo.load: what a path holds, once per file
  mnemo/formats/openai.py   OpenAI's encodings by name: files found and checked once per encoding
  mnemo/formats/tekken.py   tekken JSON: base64 ranks parsed and checked once per file
  mnemo/formats/tiktoken.py  .tiktoken files: base64 parsing and checks once per file
  mnemo/hf.py               transformers' backend object: hands calls on, or to hf_encoding
  mnemo/inspect_vocab.py    `mnemo inspect`: encodes each token once and each held-out document once
                            through the compiled encoder; the rest is list building
  mnemo/interop.py          re-exports only (mnemo/formats/)
  mnemo/location.py         where files are: a stat, an open, a rename or an fsspec call per file
  mnemo/packing.py          numpy arrays from the compiled encoder's packed ids, once per text
  mnemo/patterns.py         presets and compile_pattern: once per pattern and process; the scanner
                            it builds (pretokenize.SplitProgram) is compiled
  mnemo/progress.py         tqdm lines for the phases of a run, a call per document or part
  mnemo/prune.py            training runs around the compiled merge loop, and a set lookup per
                            refused candidate
  mnemo/ray_data.py         Ray Data's map_batches callable: a loop over a batch's rows around
                            the compiled encoder
  mnemo/regex_family.py     parses a split regex and builds its tables with numpy, once per pattern
  mnemo/regex_tables.py     rewrites a regex outside the family for another Unicode table, once per
                            pattern (numpy and the `regex` module do the work); the check of each
                            text is pretokenize.marked, compiled
  mnemo/reference.py        the naive twins: the oracle the compiled code is tested against
                            stays plain Python, so it cannot share a compiler bug with it
  mnemo/reference_superword.py  the naive twins of superword.py: the oracle stays plain Python,
                            as reference.py does
  mnemo/remote.py          URLs through fsspec: opened, checked and uploaded once per file
  mnemo/shards.py           shard directories: a manifest (JSON) and .tok files, once per shard
  mnemo/sources.py          file reading and planning, done by C libraries (lzma, pyarrow, json for
                            the lines the fast path declines); the hot part, the text field of
                            each JSON line, moved to the compiled mnemo/jsonfield.py
  mnemo/stackfiles.py       training stacks' token files: numpy writes whole blocks and memory-maps
                            the files; nothing runs per token in Python
  mnemo/stored_programs.py  decodes one stored program per pattern and process
  mnemo/streaming.py        encode_iterable only cuts text and hands it to the compiled encoder
                            and pre-tokenizer
  mnemo/superbpe.py         stage 2's orchestration around the compiled words, cut and merge loop
  mnemo/tokenizer.py        policy (validation, special tokens, errors) around the compiled encoder
  mnemo/tokenizing.py       process orchestration and file I/O around the compiled encoder
  mnemo/tokfile.py          .tok: struct/numpy parsing of a header, numpy writes whole blocks
  mnemo/tokshow.py          formats tokens for a terminal, a few hundred at a time
  mnemo/unstable.py         encode_with_unstable: the last pre-token's completions, once per call
  mnemo/training.py         process orchestration around the compiled counter and trainer
  mnemo/vocab.py            the vocabulary's rules, checked once per vocabulary
  mnemo/vocabfile.py        tokenizer.bin: struct/numpy parsing of a whole file, once per file
  mnemo/vocabulary.py       a vocabulary's tables and lookups, built once per vocabulary
  mnemo/work.py             the work engine: sockets, processes and bookkeeping per task, not per byte
  mnemo/work_ray.py         the Ray executor: submits tasks and waits; Ray pickles its task
                            functions by reference, which needs them plain Python
  mnemo/workers.py          the worker start method, signals and parent death; nothing hot
"""

from typing import Final

HOT_MODULES: Final = [
    "mnemo/classmask.py",
    "mnemo/count.py",
    "mnemo/encode_chunk.py",
    "mnemo/encode_text.py",
    "mnemo/idmap.py",
    "mnemo/jsonfield.py",
    "mnemo/kernels.py",
    "mnemo/merge_loop.py",
    "mnemo/merge_loop_wide.py",
    "mnemo/pretokenize.py",
    "mnemo/pretokenize_bits.py",
    "mnemo/pretokenize_named.py",
    "mnemo/ranks.py",
    "mnemo/special_match.py",
    "mnemo/superword.py",
    "mnemo/tokenizer_json.py",
]
