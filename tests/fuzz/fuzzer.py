"""mnemo's fuzzer: hostile files and arguments against the loaders and the API, each case run in a
long-lived child process so that a crash or a hang is observed, not suffered.

Used two ways (docs/fuzzing.md):

* `tests/fuzz/test_fuzz.py` (plain `pytest`, `make test`) runs a bounded, seeded slice and the
  fixed regression cases;
* `python tests/fuzz/fuzzer.py --seconds N --out fuzz-findings` (`make fuzz`) runs for N seconds,
  writes a reproducer folder per distinct finding and exits 1 when it found anything.

The oracle: every case ends in success or in a `MnemoError`; for hostile arguments of the API also
in a `TypeError`/`ValueError` whose message names an argument of the function called.  A signal, a
case that outlives its time bound, or any other exception (KeyError, IndexError, RecursionError,
UnicodeError, OverflowError, MemoryError, ...) is a finding.

A case is (target, payload bytes).  Targets and what their payload is:

    tokenizer_bin  a tokenizer.bin image           -> Tokenizer.from_bytes, then encode/decode
    tok            a .tok file                     -> tokfile.read_tok_header, mnemo.open_tok
    gpt2           vocab.json and merges.txt       -> interop.load_gpt2 (payload: pack_parts)
    tiktoken       a .tiktoken file                -> interop.load_tiktoken
    hf             a tokenizer.json                -> interop.load_hf
    api            a Python literal (fn, args, kwargs), read with ast.literal_eval (never pickle)

Nothing here is imported by mnemo; the worker imports mnemo as installed.
"""

from __future__ import annotations

import argparse
import ast
import base64
import contextlib
import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGETS = ("tokenizer_bin", "tok", "gpt2", "tiktoken", "hf", "api", "shard_dir", "stack", "pickle", "tekken",
           "tiktoken_ref", "hf_ref", "url", "stream", "offsets", "iterator")
#: How often `make fuzz` picks each target, relative to 1 (the URL cases go through an S3 server:
#: slow, so rare).
TARGET_WEIGHTS = {"url": 0.1}
#: A case that runs longer than this is a hang (every loader must be linear in its file, and the
#: files here are small).
CASE_TIMEOUT = 5.0
#: Address-space limit of the worker: a runaway allocation becomes a MemoryError (a finding)
#: instead of pushing a shared machine into the OOM killer.
WORKER_MEMORY = 4 << 30

# ---- payloads ----------------------------------------------------------------------------------


def pack_parts(parts: Sequence[bytes]) -> bytes:
    """Several files in one payload (gpt2: vocab.json, merges.txt): each as u32 length + bytes."""
    return b"".join(struct.pack("<I", len(p)) + p for p in parts)


def unpack_parts(data: bytes) -> list[bytes]:
    parts = []
    pos = 0
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        parts.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return parts


#: The files a reproducer folder holds for each target (gpt2 has two).
FILE_NAMES = {
    "tokenizer_bin": ["tokenizer.bin"],
    "tok": ["input.tok"],
    "gpt2": ["vocab.json", "merges.txt"],
    "tiktoken": ["input.tiktoken"],
    "hf": ["tokenizer.json"],
    "api": ["call.py"],
    "pickle": ["expect", "image.bin", "state.py"],
    "tekken": ["tekken.json"],
    "tiktoken_ref": ["input.tiktoken"],
    "hf_ref": ["tokenizer.json"],
    "stream": ["case.py"],
    "offsets": ["case.py"],
    "iterator": ["case.py"],
}
#: Targets whose payload is a set of named files (pack_files): a reproducer folder holds them
#: under files/, and `head` (the oracle's flags, a URL's tail).
FILE_SETS = ("shard_dir", "stack", "url")

#: Parameter names of the API functions: a TypeError/ValueError must name one of them.
API_PARAMS: dict[str, tuple[str, ...]] = {
    "encode": ("text", "allowed_special", "disallowed_special"),
    "encode_ordinary": ("text",),
    "encode_batch": ("texts", "allowed_special", "disallowed_special", "workers"),
    "encode_documents": ("docs", "bos"),
    "decode": ("tokens", "errors"),
    "decode_bytes": ("tokens",),
    "token_bytes": ("token",),
    "train": ("files", "vocab_size", "pattern", "special_tokens", "tie", "algorithm", "workers",
              "max_chunk_bytes", "verify", "text_field"),
    "train_from_iterator": ("iterator", "vocab_size", "pattern", "special_tokens", "tie", "algorithm",
                            "workers", "max_chunk_bytes", "verify"),
    "memeq": ("a", "a_off", "b", "b_off", "n"),
    "pair_scan": ("tokens", "a", "b", "out", "start", "stop"),
    "pair_positions": ("tokens", "a", "b", "cap", "start", "stop"),
}


def api_payload(fn: str, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> bytes:
    """An api case: the literal text `(fn, args, kwargs)`.  Buffers for the kernels are written
    as {"$u16": bytes} (a uint16 array), {"$i64": n} (a writable int64 array of n items) and
    {"$strided": bytes} (a non-contiguous view); {"$iter": [...]} is an iterator over the list
    (documents for mnemo.train_from_iterator, read once); {"$float": "inf"} is
    float("inf") (whose repr is not a literal)."""
    return repr((fn, tuple(args), dict(kwargs or {}))).encode("utf-8")


# ---- the worker (child process) ----------------------------------------------------------------


def _names_argument(fn: str, message: str) -> bool:
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(p)}(?![A-Za-z_])", message) for p in API_PARAMS.get(fn, ()))


def _buffer_arg(value: Any) -> Any:
    import numpy as np

    if isinstance(value, dict) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if key == "$u16" and isinstance(inner, bytes):
            return np.frombuffer(inner[: len(inner) // 2 * 2], dtype=np.uint16)
        if key == "$i64" and isinstance(inner, int) and 0 <= inner <= 1 << 16:
            return np.zeros(inner, dtype=np.int64)
        if key == "$strided" and isinstance(inner, bytes):
            return memoryview(inner)[::2]
        if key == "$iter" and isinstance(inner, list):
            return iter([_buffer_arg(v) for v in inner])
        if key == "$float" and isinstance(inner, str):
            return float(inner)
    return value


class _Env:
    """What the worker's cases share: the seed tokenizer and a scratch folder."""

    def __init__(self, seed_dir: Path, scratch: Path) -> None:
        from mnemo import Tokenizer

        self.tokenizer = Tokenizer.load(seed_dir / "tokenizer.bin")
        self.scratch = scratch
        self.cases = 0
        self.seed_dir = seed_dir
        self._s3: Any = None
        self.bucket = f"mnemo-fuzz-{os.getpid()}"
        self._references()

    def _references(self) -> None:
        """The unmutated seeds' answers, and the reference libraries (imported here: an import
        inside a case would count against its time bound)."""
        import numpy as np
        import tokenizers  # noqa: F401
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        from mnemo import open_tok
        from mnemo.formats.tiktoken import to_tiktoken
        from mnemo.stackfiles import read_stack_file

        f = open_tok(self.seed_dir / "shards", self.tokenizer)
        self.ref_shards = (_tokens_of(f), f.header.n_docs, f.header.n_tokens, [len(p) for p in f.parts])
        self.ref_stacks = {}
        for fmt in STACK_FORMATS:
            main = _safe_name(_stack_files(self.seed_dir / f"stack-{fmt}")[0][0])
            s = read_stack_file(self.seed_dir / f"stack-{fmt}" / main, fmt)
            self.ref_stacks[fmt] = (s.tokens.astype("int64").tolist(), None if s.doc_ends is None else s.doc_ends.tolist(),
                                    s.tokens.dtype.name)
        self.seed_image = (self.seed_dir / "tokenizer.bin").read_bytes()
        self.tekkenizer = Tekkenizer
        self.gpt2_pat = GPT2_PAT
        self.tt = to_tiktoken(self.tokenizer)
        self.iter_tokens = (np.arange(600, dtype=np.int64) * 7 % self.tokenizer.n_vocab).astype(np.uint16)
        if os.environ.get("AWS_ENDPOINT_URL"):  # the parent started the S3 server: connect before the first case
            self.s3fs()

    def s3fs(self) -> Any:
        """The moto server's S3 (the parent started it: AWS_ENDPOINT_URL), and this worker's bucket."""
        if self._s3 is None:
            import s3fs

            self._s3 = s3fs.S3FileSystem(anon=False, use_listings_cache=False)
            self._s3.mkdir(self.bucket)
        return self._s3

    def write(self, name: str, data: bytes) -> Path:
        path = self.scratch / name
        path.write_bytes(data)
        return path


def _run_api(env: _Env, data: bytes) -> None:
    fn, args, kwargs = ast.literal_eval(data.decode("utf-8"))
    args = [_buffer_arg(a) for a in args]
    kwargs = {k: _buffer_arg(v) for k, v in kwargs.items()}
    if fn == "selftest":  # the harness's own tests: what a crash, a hang, a stray exception look like
        import signal

        what = args[0]
        if what == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif what == "hang":
            time.sleep(3600)
        elif what == "exit":
            os._exit(3)
        elif what == "keyerror":
            raise KeyError("selftest")
        elif what == "mnemo":
            from mnemo import MnemoError

            raise MnemoError("selftest")
        return
    if fn in ("memeq", "pair_scan", "pair_positions"):
        from mnemo import kernels

        getattr(kernels, fn)(*args, **kwargs)
    elif fn in ("train", "train_from_iterator"):
        import mnemo

        getattr(mnemo, fn)(*args, **kwargs)
    elif fn == "encode_batch":
        kwargs.setdefault("workers", 1)  # no process pool inside the worker unless the case asks
        env.tokenizer.encode_batch(*args, **kwargs)
    else:
        result = getattr(env.tokenizer, fn)(*args, **kwargs)
        if fn == "encode_documents":
            len(result)


def run_case(env: _Env, target: str, data: bytes) -> None:
    """Run one case in this process; returns normally or raises what mnemo raised."""
    from mnemo import interop, open_tok, tokfile
    from mnemo.tokenizer import Tokenizer

    if target == "tokenizer_bin":
        tok = Tokenizer.from_bytes(data, "<fuzz tokenizer.bin>")
        ids = tok.encode_ordinary("Hello, world! 123 ÄÖÜ 😀")
        tok.decode(ids)
    elif target == "tok":
        # a new name per case: rewriting a file that an earlier case's memory map (kept alive by a
        # traceback) still maps would make a later touch of that map a SIGBUS -- the harness's
        # crash, not mnemo's
        env.cases += 1
        path = env.write(f"input-{env.cases}.tok", data)
        try:
            tokfile.read_tok_header(path)
            f = open_tok(path, env.tokenizer)  # the one open_tok: a file here (shard folders too)
            int(f.tokens.sum()) if len(f.tokens) else 0
            del f
        finally:
            path.unlink()
    elif target == "gpt2":
        vocab, merges = (unpack_parts(data) + [b"", b""])[:2]
        tok = interop.load_gpt2(env.write("vocab.json", vocab), env.write("merges.txt", merges))
        tok.decode(tok.encode_ordinary("Hello, world!"))
    elif target == "tiktoken":
        tok = interop.load_tiktoken(env.write("input.tiktoken", data), "mnemonic")
        tok.decode(tok.encode_ordinary("Hello, world!"))
    elif target == "hf":
        tok = interop.load_hf(env.write("tokenizer.json", data))
        tok.decode(tok.encode_ordinary("Hello, world!"))
    elif target == "api":
        _run_api(env, data)
    elif target in SURFACE_RUNS:
        SURFACE_RUNS[target](env, data)
    else:
        raise RuntimeError(f"unknown fuzz target {target!r}")


# ---- the surfaces of issue 28: several files, references, and differential oracles ------------
#
# A case of these targets may load; then its result must be the reference's (the unmutated
# seed's, or another library's): a mutation that loads with a different answer raises Differs,
# which is a finding like any stray exception.


class Differs(AssertionError):
    """A case loaded, or ran, with an answer other than the reference's: a silent wrong answer."""


#: Texts the differential oracles encode (mixed scripts, a surrogate pair's character, specials).
SAMPLES = ["Hello, world! 123 ÄÖÜ 😀", "don't stop 12345 naïve café; Привет", "你好世界 こんにちは",
           "def f(x):\n    return x * 2\r\n\t", "<|bos|> hi <|eos|>", "   a  b   ", "ﬁ ＡＢＣ é\u0301"]


def pack_files(files: Sequence[tuple[str, bytes]], head: bytes = b"") -> bytes:
    """A payload of named files (a shard directory, a stack set, a URL case): `head` (the
    oracle's flags or a URL's tail), then name, bytes, name, bytes..."""
    return pack_parts([head] + [p for name, data in files for p in (name.encode(), data)])


def unpack_files(data: bytes) -> tuple[bytes, list[tuple[str, bytes]]]:
    parts = unpack_parts(data)
    head, rest = (parts[0], parts[1:]) if parts else (b"", [])
    return head, [(rest[i].decode("utf-8", "replace"), rest[i + 1]) for i in range(0, len(rest) - 1, 2)]


def _safe_name(name: str) -> str:
    """A payload's file name as a plain name in the case folder (never a path outside it)."""
    name = name.replace("/", "_").replace("\\", "_").replace("\0", "_")
    return name if name not in ("", ".", "..") else "_"


def _case_folder(env: "_Env", files: Sequence[tuple[str, bytes]]) -> Path:
    env.cases += 1
    folder = env.scratch / f"case-{env.cases}"
    folder.mkdir()
    for name, body in files:
        (folder / _safe_name(name)).write_bytes(body)
    return folder


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise Differs(what)


def _tokens_of(f: Any) -> list[int]:
    import numpy as np

    return np.asarray(f.tokens).astype(np.int64).tolist()


def _run_shard_dir(env: "_Env", data: bytes) -> None:
    """open_tok on a shard directory, then verify_tok of each shard the manifest lists: a
    directory that opens and verifies holds the seed's documents and tokens, unless the manifest
    was edited and signed again (head b"signed"), which may legitimately say other things."""
    from mnemo import open_tok
    from mnemo.shards import read_manifest
    from mnemo.tokfile import verify_tok

    head, files = unpack_files(data)
    folder = _case_folder(env, files)
    try:
        f = open_tok(folder, env.tokenizer)
        got = (_tokens_of(f), f.header.n_docs, f.header.n_tokens, [len(p) for p in f.parts])
        del f
        for s in read_manifest(folder).shards:
            verify_tok(folder / s.name)
        if head != b"signed":
            _check(got == env.ref_shards, f"the shard directory opened and verified with other contents: "
                   f"{got[1]} documents, {got[2]} tokens, parts {got[3]} (the seed's: {env.ref_shards[1:]})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run_stack(env: "_Env", data: bytes) -> None:
    """read_stack_file on a Megatron, datatrove or nanoGPT set: a set that reads holds the seed's
    documents; when the token file itself was changed (head b"body": its ids have no checksum,
    by design) at least its document boundaries and type."""
    from mnemo.stackfiles import SIDECAR_SUFFIX, read_stack_file

    head, files = unpack_files(data)
    fmt, _, body = head.decode().partition(":")
    folder = _case_folder(env, files)
    try:
        main = folder / _safe_name(files[0][0])
        s = read_stack_file(main, fmt)
        ends = None if s.doc_ends is None else s.doc_ends.tolist()
        ref_tokens, ref_ends, ref_dtype = env.ref_stacks[fmt]
        # no boundaries at all is no wrong answer: documents() refuses (a nanoGPT file without its
        # sidecar).  A nanoGPT file's boundaries are its BOS ids, in the token body itself: a
        # changed body may move one (its ids have no checksum, by design), so there only the
        # count, which the sidecar holds, must hold
        same = ends == ref_ends or (fmt == "nanogpt" and body == "body" and ends is not None and len(ends) == len(ref_ends))
        sidecar = main.name + SIDECAR_SUFFIX  # the one read_stack_file looks for (data.ds.mnemo.json)
        if not same and fmt == "datatrove" and ends is not None and not any(_safe_name(n) == sidecar for n, _ in files):
            # without mnemo's sidecar the .ds.index is the only record of the boundaries, and
            # datatrove's own reader takes its numbers as they are: another index that still rises
            # to the token count is another set, not a wrong answer -- the ends must be its numbers
            index = next((b for n, b in files if _safe_name(n) == main.name + ".index"), b"")
            same = len(index) % 8 == 0 and ends == [int.from_bytes(index[i : i + 8], "little") for i in range(0, len(index), 8)]
        _check((ends is None or same) and s.tokens.dtype.name == ref_dtype,
               f"the {fmt} set read with other documents: ends {str(ends)[:120]}, dtype {s.tokens.dtype.name}")
        if body != "body":
            _check(s.tokens.astype("int64").tolist() == ref_tokens, f"the {fmt} set read with other ids")
        if s.doc_ends is not None:
            sum(len(d) for d in s.documents())
        del s
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pickle_bytes(image: bytes, state: Any) -> bytes:
    """The bytes pickle.dumps(tokenizer) would hold for this image and state (Tokenizer.__reduce__)."""
    import pickle

    from mnemo.tokenizer import Tokenizer

    class Reduced:
        def __reduce__(self) -> tuple[Any, ...]:
            if state is None:
                return (Tokenizer.from_bytes, (image, "<pickled Tokenizer>"))
            return (Tokenizer.from_bytes, (image, "<pickled Tokenizer>"), state)

    return pickle.dumps(Reduced())


def _run_pickle(env: "_Env", data: bytes) -> None:
    """pickle.loads of a pickled Tokenizer whose image and state are mutated.  An image whose
    checksum was not made to match (head b"exact") must be refused or be the seed's tokenizer."""
    import pickle

    head, image, state_text = (unpack_parts(data) + [b"", b"", b""])[:3]
    state = ast.literal_eval(state_text.decode("utf-8", "surrogatepass")) if state_text else None
    tok = pickle.loads(_pickle_bytes(image, state))
    ids = [tok.encode(t, allowed_special="all") for t in SAMPLES]
    if head == b"exact":
        # the reference: the seed's own image with the same state (a name, aliases)
        ref, _ = _outcome(lambda: pickle.loads(_pickle_bytes(env.seed_image, state)))
        _check(ref is not None and tok == ref and tok.pattern == ref.pattern and tok.name == ref.name
               and ids == [ref.encode(t, allowed_special="all") for t in SAMPLES],
               "a pickled Tokenizer whose image was damaged (checksum not fixed) loaded as another tokenizer")
    tok.decode(ids[0])


def _ref_compare(
    what: str,
    ours: Callable[[str], list[int]],
    theirs: Callable[[str], list[int]],
    their_decode: Callable[[list[int]], str] | None = None,
) -> None:
    """Each sample encodes to the reference's ids; or, where the reference drops text its split
    regex does not match (tiktoken's rule: their_decode gives less than the text), mnemo refuses
    it with its InputError (docs/pretokenizer.md, "Text the pattern does not match")."""
    from mnemo.errors import InputError

    for text in SAMPLES:
        try:
            b = theirs(text)
        except BaseException as exc:  # noqa: BLE001 -- tiktoken's Rust panics are BaseExceptions
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            # The reference crashed on this text (tiktoken panics on an empty match of a
            # regex such as `\p{N}*+`): no answer to compare with; ours must still not crash.
            with contextlib.suppress(InputError):  # a text its regex leaves out: refused, as it may be
                ours(text)
            continue
        try:
            a = ours(text)
        except InputError as exc:
            dropped = their_decode is not None and their_decode(b) != text
            _check(dropped and "matches none of the text" in str(exc), f"{what}: {text[:30]!r} refused ({exc}), "
                   f"but the reference encodes all of it: {b[:12]}")  # fmt: skip
            continue
        _check(a == b, f"{what}: {text[:30]!r} encodes to {a[:12]} here, {b[:12]} in the reference")


def _run_tekken(env: "_Env", data: bytes) -> None:
    """formats.tekken.load_tekken; a file that loads encodes as mistral-common's Tekkenizer of
    the same file (when that accepts it)."""
    from mnemo.formats.tekken import load_tekken

    path = env.write("tekken.json", data)
    tok = load_tekken(path)
    try:
        ref = env.tekkenizer.from_file(path)
    except Exception:  # noqa: BLE001 -- the reference refused it: no answer to compare with
        ref = None
    if ref is not None:
        _ref_compare("tekken", tok.encode_ordinary, lambda t: list(ref.encode(t, bos=False, eos=False)), ref.decode)
    tok.decode(tok.encode_ordinary(SAMPLES[0]))


def _tiktoken_reference(data: bytes, pat: str) -> Any:
    """tiktoken's own reading of a rank file (tiktoken.load.load_tiktoken_bpe's parser), as
    an Encoding; None when tiktoken refuses it."""
    import tiktoken

    try:
        ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}
        return tiktoken.Encoding("fuzz", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    except Exception:  # noqa: BLE001 -- a file tiktoken cannot read has no reference answer
        return None


def _run_tiktoken_ref(env: "_Env", data: bytes) -> None:
    """interop.load_tiktoken with GPT-2's pattern; a file that loads encodes as tiktoken does."""
    from mnemo import interop

    tok = interop.load_tiktoken(env.write("input.tiktoken", data), "gpt2")
    ref = _tiktoken_reference(data, env.gpt2_pat)
    if ref is not None:
        _ref_compare("tiktoken", tok.encode_ordinary, ref.encode_ordinary)


def _run_hf_ref(env: "_Env", data: bytes) -> None:
    """interop.load_hf; a tokenizer.json that loads encodes as `tokenizers` does (ids without
    the post-processor's tokens)."""
    from mnemo import interop
    import tokenizers

    tok = interop.load_hf(env.write("tokenizer.json", data))
    try:
        ref = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
    except Exception:  # noqa: BLE001 -- tokenizers refuses it: no reference answer
        ref = None
    if ref is not None:
        # tokenizers matches added tokens in any text: mnemo's encode with every special allowed
        _ref_compare("tokenizer.json", lambda t: tok.encode(t, allowed_special="all"),
                     lambda t: ref.encode(t, add_special_tokens=False).ids)


def _outcome(fn: Callable[[], Any], strict: bool = False) -> tuple[Any, BaseException | None]:
    """(result, None) or (None, the MnemoError raised); with `strict` (errors="strict") also a
    UnicodeDecodeError, which decode(errors="strict") raises as bytes.decode does."""
    from mnemo import MnemoError

    try:
        return fn(), None
    except MnemoError as exc:
        return None, exc
    except UnicodeDecodeError as exc:
        if not strict:
            raise
        return None, exc


def _run_stream(env: "_Env", data: bytes) -> None:
    """StreamDecoder: step/feed pieces (cut where the case says) and finish, joined, equal
    decode of the whole sequence; an id decode refuses is refused by the stream too."""
    case = ast.literal_eval(data.decode("utf-8"))
    ids, cuts, errors, masked = case["ids"], case["cuts"], case["errors"], case["masked"]
    tok = env.tokenizer
    strict = errors == "strict"
    whole, whole_err = _outcome(lambda: tok.decode(ids, errors, masked=masked), strict)

    def streamed() -> str:
        d = tok.stream_decoder(errors, masked=masked)
        out, at = [], 0
        for cut in list(cuts) + [len(ids)]:
            chunk = ids[at:cut]
            if len(chunk) == 1:
                out.append(d.step(chunk[0]))
            elif chunk:
                out.append(d.feed(chunk))
            at = max(at, cut)
        out.append(d.finish())
        return "".join(out)

    got, got_err = _outcome(streamed, strict)
    _check((whole_err is None) == (got_err is None),
           f"decode {'raised ' + type(whole_err).__name__ if whole_err else 'succeeded'}, the stream "
           f"{'raised ' + type(got_err).__name__ if got_err else 'succeeded'}")
    _check(whole == got, f"the stream gave {str(got)[:60]!r}, decode {str(whole)[:60]!r}")
    if got_err is not None and not isinstance(got_err, UnicodeDecodeError):  # strict's own error: both raised it
        raise got_err


def _joined_index(text: str) -> list[int]:
    """For each character of text_bytes(text) decoded (pairs joined, lone surrogates as one
    U+FFFD), where it starts in `text`, plus len(text) at the end."""
    starts, i = [], 0
    while i < len(text):
        starts.append(i)
        i += 2 if "\ud800" <= text[i] <= "\udbff" and i + 1 < len(text) and "\udc00" <= text[i + 1] <= "\udfff" else 1
    return starts + [len(text)]


def _run_offsets(env: "_Env", data: bytes) -> None:
    """decode_with_offsets against tiktoken's; encode_with_offsets' spans index the caller's
    string: each span covers exactly the characters holding the token's bytes."""
    from mnemo.streaming import text_bytes

    case = ast.literal_eval(data.decode("utf-8"))
    tok = env.tokenizer
    if "ids" in case:
        ids = case["ids"]
        try:
            ref = env.tt.decode_with_offsets(ids)
        except (UnicodeDecodeError, KeyError, ValueError, OverflowError, TypeError):
            ref = None
        got, err = _outcome(lambda: tok.decode_with_offsets(ids))
        spans, _ = _outcome(lambda: tok.decode_with_offsets(ids, spans=True))
        if ref is None:
            if err is None:
                raise Differs(f"tiktoken refuses {str(ids)[:80]}, mnemo gave {str(got)[:80]}")
            raise err
        _check(err is None and got == (ref[0], list(ref[1])), f"offsets {str(got)[:120]} vs tiktoken's {str(ref)[:120]}")
        _check(spans is not None and [a for a, _ in spans[1]] == got[1], "spans=True starts differ from the offsets")
        return
    text = case["text"]
    ids, spans = tok.encode_with_offsets(text, allowed_special="all")
    _check(len(spans) == len(ids), f"{len(spans)} spans for {len(ids)} ids")
    index = _joined_index(text)
    parts = tok.decode_tokens_bytes(ids)
    joined = text_bytes(text)
    pos = 0  # byte offset of the token in the joined text's UTF-8
    starts = [0]  # byte offset where each joined character starts
    for ch in joined.decode("utf-8"):
        starts.append(starts[-1] + len(ch.encode("utf-8")))
    import bisect

    for k, (raw, (s, e)) in enumerate(zip(parts, spans)):
        first = bisect.bisect_right(starts, pos) - 1
        last = bisect.bisect_right(starts, pos + max(len(raw), 1) - 1) - 1
        want = (index[first], index[last + 1]) if raw else (index[first], index[first])
        _check((s, e) == want, f"token {k} ({raw!r}) of {text[:40]!r}: span ({s}, {e}), the characters holding its bytes are {want}")
        pos += len(raw)


def _run_iterator(env: "_Env", data: bytes) -> None:
    """BatchIterator.load_state_dict of an edited state (sent through JSON): refused, or the
    next batch is the one a fresh iterator gives at the state's position."""
    import numpy as np

    from mnemo.batches import BatchIterator, TokenStream

    case = ast.literal_eval(data.decode("utf-8"))
    stream = TokenStream.from_arrays(env.iter_tokens)
    cfg, steps, edit = case["cfg"], case["steps"], case["edit"]
    it = BatchIterator(stream, **cfg)
    for _ in range(steps):
        next(it)
    state = json.loads(json.dumps(it.state_dict()))
    state.update(edit)
    again = BatchIterator(stream, **cfg)
    again.load_state_dict(state)
    batch = next(again)
    position = state.get("position")
    if isinstance(position, int) and 0 <= position <= 2000:
        one = BatchIterator(stream, **{**cfg, "batch_size": 1})
        for _ in range(position):
            next(one)
        rows = [next(one) for _ in range(cfg["batch_size"])]
        want = np.concatenate([r.inputs for r in rows])
        _check(np.array_equal(batch.inputs, want), f"the batch after load_state_dict({state}) is not the one at position {position}")


def _run_url(env: "_Env", data: bytes) -> None:
    """mnemo.load / open_tok of files on the moto S3 server: the same outcome as the same files
    on disk (both load and encode alike, or both raise a MnemoError)."""
    import mnemo

    head, files = unpack_files(data)
    spec = head.decode("utf-8", "replace")
    folder = _case_folder(env, files)
    prefix = f"case-{env.cases}"
    fs = env.s3fs()
    for name, body in files:
        fs.pipe(f"{env.bucket}/{prefix}/{_safe_name(name)}", body)
    opts = {"pattern": "gpt2"} if spec.endswith(".tiktoken") else {}

    def use(where: str) -> Any:
        if spec.endswith(".tok") or not spec.strip("/"):  # a .tok, or the case's folder: a shard directory
            f = mnemo.open_tok(where, env.tokenizer)
            return (_tokens_of(f), f.header.n_docs)
        tok = mnemo.load(where, **opts)
        return [tok.encode_ordinary(t) for t in SAMPLES]

    try:
        # joined as text, as the URL is: Path's "/" would make a tail "/" the root folder
        local, local_err = _outcome(lambda: use(f"{folder}/{spec}"))
        remote, remote_err = _outcome(lambda: use(f"s3://{env.bucket}/{prefix}/{spec}"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if files:
            fs.rm(f"{env.bucket}/{prefix}", recursive=True)
    _check((local_err is None) == (remote_err is None),
           f"on disk: {type(local_err).__name__ if local_err else 'loads'}; at the URL: "
           f"{str(remote_err)[:200] if remote_err else 'loads'}")
    _check(local == remote, "the URL's files load with another result than the same files on disk")
    if remote_err is not None:
        raise remote_err


SURFACE_RUNS: dict[str, Callable[["_Env", bytes], None]] = {
    "shard_dir": _run_shard_dir, "stack": _run_stack, "pickle": _run_pickle, "tekken": _run_tekken,
    "tiktoken_ref": _run_tiktoken_ref, "hf_ref": _run_hf_ref, "url": _run_url, "stream": _run_stream,
    "offsets": _run_offsets, "iterator": _run_iterator,
}


def _short(path: str) -> str:
    """mnemo/x.py or json/decoder.py rather than the full site-packages path."""
    for mark in ("site-packages/", "/lib/python3."):
        if mark in path:
            tail = path.split(mark, 1)[1]
            return tail.split("/", 1)[1] if mark.startswith("/lib") else tail
    return path


def classify(target: str, data: bytes, exc: BaseException | None) -> tuple[str, str]:
    """(kind, detail): kind "ok" or "error" passes the oracle, "bad" does not."""
    if exc is None:
        return "ok", ""
    from mnemo import MnemoError

    where = ""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name != "_check":  # a Differs is where the oracle's check is
            where = f"{_short(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    text = f"{type(exc).__name__}: {str(exc)[:300]}"
    if isinstance(exc, MnemoError):
        return "error", text
    if target == "api":
        try:
            fn, _, kwargs = ast.literal_eval(data.decode("utf-8"))
        except (ValueError, SyntaxError, UnicodeDecodeError, TypeError):
            fn, kwargs = "", {}
        if type(exc) in (TypeError, ValueError) and _names_argument(str(fn), str(exc)):
            return "error", text
        # decode(errors="strict") asks for bytes.decode's own error, as tiktoken's decode does
        if fn == "decode" and isinstance(exc, UnicodeDecodeError) and kwargs.get("errors") == "strict":
            return "error", text
    return "bad", f"{text} (at {where})"


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the parent dies (else a worker stuck in a hanging
    case would outlive a killed `make fuzz`)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def worker_main(seed_dir: str, scratch: str, parent: int) -> None:
    """Read framed cases on stdin, answer one JSON line per case on the original stdout."""
    import faulthandler
    import resource

    _die_with_parent()
    if os.getppid() != parent:  # the parent died before prctl took effect
        return
    # Ctrl-C at the terminal and a SIGTERM to the process group reach the worker too: the parent
    # decides (it ends the run after the case in hand and closes the worker); a worker killed
    # by them had been reported as a crash of the case it was running
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything mnemo prints goes to stderr, never into the protocol
    faulthandler.enable()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(WORKER_MEMORY, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    env = _Env(Path(seed_dir), Path(scratch))
    os.chdir(env.scratch)  # relative names a case passes land in the scratch folder
    proto.write("ready\n")
    proto.flush()
    inp = sys.stdin.buffer
    while True:
        head = inp.read(4)
        if len(head) < 4:
            return
        (n,) = struct.unpack("<I", head)
        body = inp.read(n)
        target, _, data = body.partition(b"\0")
        name = target.decode()
        err: BaseException | None = None
        try:
            run_case(env, name, data)
        except SystemExit:
            raise
        except BaseException as exc:  # noqa: BLE001 -- every exception is judged by the oracle
            err = exc
        kind, detail = classify(name, data, err)
        err = None
        proto.write(json.dumps({"kind": kind, "detail": detail}) + "\n")
        proto.flush()


# ---- the parent side -------------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str  # ok, error (both pass), bad (other exception), crash, hang
    detail: str
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.kind in ("ok", "error")


class Worker:
    """One long-lived child that runs cases until it dies or hangs; then the caller restarts it."""

    def __init__(self, seed_dir: Path) -> None:
        self.errlog = tempfile.TemporaryFile()
        self.err_mark = 0
        self.scratch = tempfile.mkdtemp(prefix="mnemo-fuzz-worker-")
        # the worker's temporary files (mnemo's local copies of URL cases among them) go in its
        # scratch folder, removed by close(): a worker killed after a hang, or by close()
        # itself, never runs its exit hooks, and its copies would be left in the real TMPDIR
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(seed_dir), self.scratch,
             str(os.getpid())],
            env={**os.environ, "TMPDIR": self.scratch},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
        )
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], 120)[0] or self.proc.stdout.readline() != b"ready\n":
            self.close()
            raise RuntimeError(f"the fuzz worker did not start: {self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        """What the worker wrote to stderr since the current case began (faulthandler's trace)."""
        self.errlog.seek(self.err_mark)
        return self.errlog.read()[-1500:].decode("utf-8", "replace")

    def run(self, target: str, data: bytes, timeout: float = CASE_TIMEOUT) -> Outcome:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        t0 = time.monotonic()
        self.err_mark = os.fstat(self.errlog.fileno()).st_size
        body = target.encode() + b"\0" + data
        try:
            self.proc.stdin.write(struct.pack("<I", len(body)) + body)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died(t0)
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.close()
            return Outcome("hang", f"no answer within {timeout:g} s", time.monotonic() - t0)
        line = self.proc.stdout.readline()
        if not line:
            return self._died(t0)
        reply = json.loads(line)
        return Outcome(reply["kind"], reply["detail"], time.monotonic() - t0)

    def _died(self, t0: float) -> Outcome:
        code = self.proc.wait()
        what = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        tail = self._stderr_tail().strip().splitlines()
        return Outcome("crash", f"the worker {what}" + (f": {' | '.join(tail[-6:])}" if tail else ""),
                       time.monotonic() - t0)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                try:
                    f.close()
                except BrokenPipeError:
                    pass
        self.errlog.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


@dataclass
class Finding:
    target: str
    data: bytes
    outcome: Outcome
    confirmed: bool
    count: int = 1

    @property
    def signature(self) -> str:
        """Findings with one signature are one defect: the kind plus the exception and where."""
        detail = self.outcome.detail
        target = self.target
        if target == "api":
            target += ":" + self.data.split(b",", 1)[0].strip(b"(' ").decode("utf-8", "replace")
        if self.outcome.kind == "bad":
            exc = detail.split(":", 1)[0]
            at = detail.rsplit("(at ", 1)[-1].rstrip(")")
            return f"{target}:bad:{exc}:{at}"
        return f"{target}:{self.outcome.kind}"

    def describe(self) -> str:
        state = "" if self.confirmed else " (did not reproduce alone in a fresh worker)"
        call = f" {self.data[:200].decode('utf-8', 'replace')}" if self.target == "api" else f" ({len(self.data)} bytes)"
        return f"{self.target}{call}: {self.outcome.kind}{state}: {self.outcome.detail}".replace("\n", " ")


class Runner:
    """Runs cases through a Worker, restarting it after a crash or hang, and keeps the findings
    (one per signature: the smallest input that showed it)."""

    def __init__(self, seed_dir: Path, timeout: float = CASE_TIMEOUT, confirm: bool = True) -> None:
        self.seed_dir = seed_dir
        self.timeout = timeout
        self.confirm = confirm
        self.worker: Worker | None = None
        self.findings: dict[str, Finding] = {}
        self.cases = 0
        self.restarts = 0
        #: target -> outcome kind -> cases (the per-surface counts `make fuzz` prints)
        self.counts: dict[str, dict[str, int]] = {}

    def _worker(self) -> Worker:
        if self.worker is None or not self.worker.alive:
            if self.worker is not None:
                self.worker.close()
                self.restarts += 1
            self.worker = Worker(self.seed_dir)
        return self.worker

    def run(self, target: str, data: bytes) -> Outcome:
        self.cases += 1
        outcome = self._worker().run(target, data, self.timeout)
        kinds = self.counts.setdefault(target, {})
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
        if outcome.passed:
            return outcome
        found = Finding(target, data, outcome, True)
        old = self.findings.get(found.signature)
        if outcome.kind in ("crash", "hang") and self.confirm and (old is None or not old.confirmed):
            # the case that was running when the worker died: again, alone, in a fresh worker
            self._worker()
            alone = Worker(self.seed_dir)
            try:
                again = alone.run(target, data, self.timeout)
            finally:
                alone.close()
            found.confirmed = again.kind == outcome.kind
        if old is None:
            self.findings[found.signature] = found
        else:
            old.count += 1
            if outcome.kind == "bad" and len(data) < len(old.data):  # deterministic: keep the smallest
                found.count = old.count
                self.findings[found.signature] = found
        return outcome

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None

    def count_lines(self) -> list[str]:
        """One line per target: its cases, and how they ended (ok, error: both pass)."""
        return [f"{t:14} {sum(k.values()):8} cases: " + ", ".join(f"{n} {kind}" for kind, n in sorted(k.items()))
                for t, k in sorted(self.counts.items())]


def start_s3() -> tuple[Any, dict[str, str]]:
    """moto's S3 server on a free port of 127.0.0.1 (as tests/test_remote.py starts it), and the
    environment its clients need (endpoint, test credentials), which the caller puts where the
    workers inherit it."""
    from moto.server import ThreadedMotoServer

    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on the fuzzer's output
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_DEFAULT_REGION": "us-east-1"}


def start_s3_here() -> Any:
    """start_s3 for this process (the fuzzer script): its environment set for good."""
    server, env = start_s3()
    os.environ.update(env)
    return server


def write_reproducer(folder: Path, finding: Finding) -> Path:
    """A folder per finding: the input file(s), `target` and `description.txt` (one line).  Copy
    the folder into tests/fuzz/regressions/ to make it a regression case."""
    digest = hashlib.sha1(finding.target.encode() + finding.data).hexdigest()[:12]
    out = folder / f"{finding.target}-{digest}"
    out.mkdir(parents=True, exist_ok=True)
    if finding.target in FILE_SETS:
        head, files = unpack_files(finding.data)
        (out / "files").mkdir(exist_ok=True)
        (out / "head").write_bytes(head)
        for k, (name, part) in enumerate(files):
            (out / "files" / f"{k:03d}-{_safe_name(name)}").write_bytes(part)
    parts = unpack_parts(finding.data) if finding.target in ("gpt2", "pickle") else [finding.data]
    for name, part in zip(FILE_NAMES.get(finding.target, []), parts):
        (out / name).write_bytes(part)
    (out / "target").write_text(finding.target + "\n")
    (out / "description.txt").write_text(f"{finding.describe()} (seen {finding.count} times)\n")
    return out


def read_reproducer(folder: Path) -> tuple[str, bytes]:
    """(target, payload) of a reproducer folder (a finding or a regression case)."""
    target = (folder / "target").read_text().strip()
    if target in FILE_SETS:
        files = [(p.name.split("-", 1)[1], p.read_bytes()) for p in sorted((folder / "files").iterdir())]
        return target, pack_files(files, (folder / "head").read_bytes())
    parts = [(folder / name).read_bytes() for name in FILE_NAMES[target]]
    return target, pack_parts(parts) if target in ("gpt2", "pickle") else parts[0]


# ---- seeds: valid files made by mnemo itself ---------------------------------------------------

SEED_DOCS = [
    "Hello world! Hello there, world. The quick brown fox jumps over the lazy dog.",
    "don't I'll we've 12345 $9.99 (test) a... b",
    "Grüße aus Köln, naïve café; Привет мир; 你好世界; こんにちは; 😀😀 emoji",
    "def f(x):\n    return x * 2  # code\n\tindented\r\n",
] * 8


def make_seeds(seed_dir: Path) -> None:
    """Train a tiny tokenizer and save it in every format mnemo writes (convert's functions)."""
    import mnemo
    from mnemo import interop, tokfile, vocabfile

    seed_dir.mkdir(parents=True, exist_ok=True)
    tok = mnemo.train_from_iterator(SEED_DOCS, vocab_size=256 + 60 + 16, workers=1)
    tok.save(seed_dir / "tokenizer.bin")
    # the layout mnemo wrote before format version 3, which it still reads
    (seed_dir / "tokenizer_v1.bin").write_bytes(
        vocabfile.encode_tokenizer_bin(tok.merges, tok.pattern, list(tok.special_tokens), tok.tie, tok.merge_counts, version=1)
    )
    interop.save_gpt2(tok, seed_dir / "vocab.json", seed_dir / "merges.txt")
    interop.save_tiktoken(tok, seed_dir / "seed.tiktoken")
    interop.save_hf(tok, seed_dir / "tokenizer.json")
    with tokfile.TokWriter(seed_dir / "seed.tok", tok) as w:
        for doc in SEED_DOCS[:4]:
            w.write_doc(tok.render_document(doc))
    with tokfile.TokWriter(seed_dir / "chat.tok", tok, chat=True) as w:
        w.write_doc(tok.render_conversation([{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]))
    make_surface_seeds(seed_dir, tok)


def load_seeds(seed_dir: Path) -> dict[str, list[bytes]]:
    read = lambda name: (seed_dir / name).read_bytes()  # noqa: E731
    return {
        "tokenizer_bin": [read("tokenizer.bin"), read("tokenizer_v1.bin")],
        "tok": [read("seed.tok"), read("chat.tok")],
        "gpt2": [pack_parts([read("vocab.json"), read("merges.txt")])],
        "tiktoken": [read("seed.tiktoken")],
        "hf": [read("tokenizer.json")],
        **load_surface_seeds(seed_dir),
    }


# ---- mutations ---------------------------------------------------------------------------------

INTERESTING_INTS = [0, 1, 2, 255, 256, 257, 32767, 32768, 65535, 65536, 65280, 2**31 - 1, 2**31, 2**32 - 1,
                    2**32, 2**63 - 1, 2**63, 2**64, 10**11, 10**30, -1, -2, -(2**31), -(2**63)]
INTERESTING_BYTES = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80",
                     b"\xef\xbb\xbf", b"\r\n", b"\n", b" ", b"\"", b"\\", b"\\ud800", b"{", b"[", b"]", b"}",
                     b"99999999999999999999", b"-1", b"\xc2\xb2", b"1e999", b"NaN", b"null", b"<|bos|>"]


def mutate_bytes(rng: random.Random, data: bytes, others: Sequence[bytes] = ()) -> bytes:
    """One to four blind byte mutations: flip, set, insert, delete, duplicate, truncate, splice."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        n = len(buf)
        pos = rng.randint(0, n)
        if op == 0 and n:
            buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            buf[rng.randrange(n)] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif op == 2:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 3:
            buf[pos:pos] = rng.choice(INTERESTING_BYTES)
        elif op == 4 and n:
            del buf[pos : pos + rng.randint(1, 32)]
        elif op == 5 and n:
            chunk = buf[pos : pos + rng.randint(1, 64)]
            buf[pos:pos] = chunk * rng.randint(1, 8)
        elif op == 6:
            del buf[rng.randint(0, n) :]
        elif op == 7 and others:
            other = rng.choice(others)
            cut = rng.randint(0, len(other))
            buf[pos:] = other[cut:]
        elif op == 8 and n >= 8:
            at = rng.randrange(n - 7)
            width = rng.choice([1, 2, 4, 8])
            value = rng.choice(INTERESTING_INTS) % (1 << (8 * width))
            buf[at : at + width] = value.to_bytes(width, "little")
    return bytes(buf)


def fix_bin_crc(data: bytes) -> bytes:
    """A tokenizer.bin whose stored CRC matches, so that a mutation reaches the checks after the
    checksum: version 3's of the whole file (its CRC field read as zeros), or versions 1 and 2's
    of the bytes after the header (docs/formats.md)."""
    if len(data) < 32:
        return data
    if data[8:10] == b"\x03\x00":
        crc = zlib.crc32(data[28:], zlib.crc32(bytes(4), zlib.crc32(data[:24])))
    else:
        crc = zlib.crc32(data[32:])
    return data[:24] + struct.pack("<I", crc) + data[28:]


def bin_sections(data: bytes) -> list[int]:
    """Where each section head of a version-3 image starts, as far as the lengths lead."""
    heads: list[int] = []
    pos = 32
    while pos + 16 <= len(data) and len(heads) < 64:
        heads.append(pos)
        pos += 16 + -(-struct.unpack_from("<Q", data, pos + 8)[0] // 8) * 8
    return heads


def mutate_tokenizer_bin(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    if rng.random() < 0.4 and len(data) >= 32:
        buf = bytearray(data)
        if data[8:10] == b"\x03\x00":
            # a header field, or a section's tag, flags, length or first payload word
            fields = [(8, 2), (10, 2), (12, 4), (16, 8), (28, 4)]
            for head in bin_sections(data):
                fields += [(head, 4), (head + 4, 4), (head + 8, 8), (head + 16, 4)]
        else:
            # a header field (u16 at 8, 10, 16; u32 at 12, 20; u8 at 18, 19)
            fields = [(8, 2), (10, 2), (12, 4), (16, 2), (18, 1), (19, 1), (20, 4), (28, 4)]
        at, width = rng.choice([(a, w) for a, w in fields if a + w <= len(buf)])
        if width == 4 and at >= 32 and (at - 32) % 8 == 0 and rng.random() < 0.3:
            buf[at : at + 4] = rng.choice([b"MRGS", b"SPEC", b"PATN", b"TIER", b"CNTS", b"IDMP", b"ENCT", b"WRTR", b"RANK"])
        else:
            buf[at : at + width] = (rng.choice(INTERESTING_INTS) % (1 << (8 * width))).to_bytes(width, "little")
        out = bytes(buf)
        if rng.random() < 0.5:
            out = mutate_bytes(rng, out)
    else:
        out = mutate_bytes(rng, data, others)
    return fix_bin_crc(out) if rng.random() < 0.8 else out


def fix_tok_crc(data: bytes) -> bytes:
    """A version 2 .tok whose header CRC-32 (bytes 60-63, of bytes 0-59) matches, so that a
    mutated field reaches the checks after the checksum."""
    if len(data) < 64 or data[8:10] != b"\x02\x00":
        return data
    return data[:60] + zlib.crc32(data[:60]).to_bytes(4, "little") + data[64:]


def mutate_tok(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    out = _mutate_tok(rng, data, others)
    return fix_tok_crc(out) if rng.random() < 0.8 else out


def _mutate_tok(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    if rng.random() < 0.5 and len(data) >= 64:
        buf = bytearray(data)
        at, width = rng.choice([(8, 2), (10, 2), (12, 4), (16, 8), (24, 8), (48, 4), (56, 4), (52, 4), (32, 16)])
        buf[at : at + width] = (rng.choice(INTERESTING_INTS) % (1 << (8 * width))).to_bytes(width, "little")
        out = bytes(buf)
        if rng.random() < 0.5:  # make the size agree with the header, to get past that check
            width_tok = struct.unpack_from("<H", out, 10)[0]
            n_tokens = struct.unpack_from("<Q", out, 16)[0]
            if width_tok in (2, 4) and n_tokens * width_tok < 1 << 16:
                body = out[64:]
                want = n_tokens * width_tok
                out = out[:64] + (body + bytes(rng.randrange(256) for _ in range(max(0, want - len(body)))))[:want]
        return out
    return mutate_bytes(rng, data, others)


HOSTILE_JSON: list[Any] = [5, -1, 0, 1.5, 1e308, 10**30, -(10**30), 2**63, "", "x" * 300, "\ud800", "\x00",
                           [], {}, None, True, False, [1, 2], {"a": 1}, [[[[[]]]]], "<|bos|>", "Ġ"]


def _json_paths(value: Any, path: tuple[Any, ...] = (), out: list[tuple[Any, ...]] | None = None,
                limit: int = 4000) -> list[tuple[Any, ...]]:
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    out.append(path)
    if isinstance(value, dict):
        for k, v in value.items():
            _json_paths(v, path + (k,), out, limit)
    elif isinstance(value, list):
        for i, v in enumerate(value[:200]):
            _json_paths(v, path + (i,), out, limit)
    return out


def _set_path(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return value


DEEP = "\ue000deep\ue000"


def mutate_json(rng: random.Random, data: bytes) -> bytes:
    """Structure-aware: replace a node with a hostile value, a wrong type, a huge number, deep
    nesting, many copies of a list element, or a renamed key; else a blind byte mutation."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return mutate_bytes(rng, data)
    paths = _json_paths(value)
    path = rng.choice(paths)
    op = rng.randrange(6)
    node = value
    for key in path:
        node = node[key]
    if op == 0:
        new: Any = rng.choice(HOSTILE_JSON)
    elif op == 1:
        new = DEEP
    elif op == 2 and isinstance(node, list) and node:
        new = node + [rng.choice(node)] * rng.choice([1, 10, 1000, 40000])
    elif op == 3 and isinstance(node, dict) and node:
        key = rng.choice(list(node))
        node[rng.choice([key + "x", "", key.upper(), "\ud800"])] = node.pop(key)
        new = node
    elif op == 4 and isinstance(node, str):
        new = node * rng.choice([2, 100, 8000]) if node else "\ud800"
    elif op == 5 and isinstance(node, int) and not isinstance(node, bool):
        new = rng.choice([2**63, 10**11, -node - 1, node + 1, 10**400 if rng.random() < 0.1 else 2**64])
    else:
        new = rng.choice(HOSTILE_JSON)
    value = _set_path(value, path, new)
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    if DEEP in text or json.dumps(DEEP) in text:
        depth = rng.choice([10, 1000, 100000])
        nest = "[" * depth + ("" if rng.random() < 0.3 else "]" * depth)
        text = text.replace(json.dumps(DEEP), nest).replace(json.dumps(DEEP, ensure_ascii=False), nest)
    out = text.encode("utf-8", "surrogatepass")
    return mutate_bytes(rng, out) if rng.random() < 0.2 else out


def mutate_lines(rng: random.Random, data: bytes, fields: Callable[[random.Random, list[bytes]], None]) -> bytes:
    lines = data.split(b"\n")
    op = rng.randrange(5)
    if op == 0 and lines:
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif op == 1 and lines:
        del lines[rng.randrange(len(lines))]
    elif op == 2 and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3 and lines:
        fields(rng, lines)
    else:
        return mutate_bytes(rng, data)
    return b"\n".join(lines)


def _tiktoken_fields(rng: random.Random, lines: list[bytes]) -> None:
    i = rng.randrange(len(lines))
    token, _, rank = lines[i].partition(b" ")
    if rng.random() < 0.5:
        rank = rng.choice([str(v).encode() for v in INTERESTING_INTS] + ["²".encode(), b"1e5", b"", b"0x10", b" 5",
                                                                           b"\xd9\xa3", b"+1", b"1_0"])
    else:
        raw = rng.choice([b"", b"\xff" * 8000, bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))),
                          b"a" * rng.choice([2, 300, 8000])])
        token = base64.b64encode(raw) if rng.random() < 0.8 else rng.choice([b"!!", b"=", b"YQ", b"YQ=="])
    lines[i] = token + b" " + rank


def _merges_fields(rng: random.Random, lines: list[bytes]) -> None:
    i = rng.randrange(len(lines))
    lines[i] = rng.choice([b"", b"a", b"a b c", b"\xc4\xa0 \xc4\xa0", b"#version: 0.2", b"\xff \xfe",
                           lines[i] + b" x", b"a" * 8000 + b" b", b"\\ud800 a"])


def mutate(rng: random.Random, target: str, data: bytes, others: Sequence[bytes]) -> bytes:
    if target == "tokenizer_bin":
        return mutate_tokenizer_bin(rng, data, others)
    if target == "tok":
        return mutate_tok(rng, data, others)
    if target == "hf":
        return mutate_json(rng, data) if rng.random() < 0.7 else mutate_bytes(rng, data, others)
    if target == "tiktoken":
        return mutate_lines(rng, data, _tiktoken_fields)
    if target == "gpt2":
        vocab, merges = unpack_parts(data)
        if rng.random() < 0.5:
            vocab = mutate_json(rng, vocab) if rng.random() < 0.7 else mutate_bytes(rng, vocab)
        else:
            merges = mutate_lines(rng, merges, _merges_fields)
        return pack_parts([vocab, merges])
    return mutate_surface(rng, target, data, others)


# ---- seeds and mutators of the issue-28 surfaces ---------------------------------------------


def make_converted_seed(seed_dir: Path, tok: Any) -> None:
    """converted.json: the seed's ranks as transformers' TikTokenConverter writes them (Llama 3's
    layout: ignore_merges, ids = ranks, every pair of tokens that spells a token listed), with a
    token no merge makes and one whose merge glues a part ranked after it, so that both ways of
    finding a token's pair (from its listed pairs, or by merging its bytes) are fuzzed.  Left
    out when transformers is not installed."""
    import base64 as b64

    try:
        from transformers.convert_slow_tokenizer import TikTokenConverter
    except ImportError:
        return
    ranks = [tok.decode_single_token_bytes(i) for i in range(256 + len(tok.merges))]
    ranks += [b"\x05\x06\x07", b"\x01\x02\x03", b"\x01\x02"]  # whole; made of the next one
    plain = seed_dir / "converted.tiktoken"
    plain.write_bytes(b"".join(b64.b64encode(raw) + b" %d\n" % r for r, raw in enumerate(ranks)))
    converter = TikTokenConverter(vocab_file=str(plain), pattern=GPT2_PAT, extra_special_tokens=["<|endoftext|>"])
    converter.converted().save(str(seed_dir / "converted.json"))


def make_surface_seeds(seed_dir: Path, tok: Any) -> None:
    """A shard directory (as `tokenize --ray` writes it, its shards written in this process),
    the three stack sets with their sidecars, a tekken file and a converted tokenizer.json, from
    the seed tokenizer."""
    import base64 as b64

    from mnemo.shards import Manifest, Shard, shard_name, shard_origin, write_manifest
    from mnemo.sources import plan_tasks
    from mnemo.tokenizing import ShardSettings, plan_shards, tokenize_files, write_shard

    src = seed_dir / "docs.jsonl"
    src.write_text("".join(json.dumps({"text": f"{doc} #{i}"}) + "\n" for i, doc in enumerate(SEED_DOCS * 3)))
    shard_bytes = 2048
    run = {"inputs": [[str(src), src.stat().st_size, src.stat().st_mtime_ns]], "text_field": "text", "chat": False,
           "bos": None, "eos": None, "shard_bytes": shard_bytes}
    tasks = plan_tasks([src], n_workers=1, min_task_bytes=shard_bytes, max_task_bytes=shard_bytes, whole_documents=True)
    folder = seed_dir / "shards"
    folder.mkdir()
    shards = []
    for i, group in enumerate(plan_shards(tasks, shard_bytes)):
        s = Shard(shard_name(i), group)
        job = (str(folder / s.name), s.tasks, shard_origin(run, s))
        _, n_docs, n_tokens, _, crc = write_shard(ShardSettings(False, "text", tok.special_tokens["<|bos|>"], None), tok, job)
        shards.append(Shard(s.name, s.tasks, n_docs, n_tokens, crc))
    write_manifest(folder, Manifest(tok.fingerprint, tok.n_vocab, False, run, tuple(shards), True))
    for fmt in STACK_FORMATS:
        out = seed_dir / f"stack-{fmt}"
        out.mkdir()
        tokenize_files([src], tok, out / "data", format=fmt, workers=1)
    n = 256 + len(tok.merges)
    vocab = [{"rank": i, "token_bytes": b64.b64encode(tok.decode_single_token_bytes(i)).decode(),
              "token_str": None} for i in range(n)]
    from mnemo.patterns import TEKKEN

    pat = TEKKEN[0] if isinstance(TEKKEN, tuple) and TEKKEN and isinstance(TEKKEN[0], str) else None
    config = {"pattern": pat or GPT2_PAT, "num_vocab_tokens": n, "default_vocab_size": n + 40,
              "default_num_special_tokens": 40, "version": "v7"}
    specials = [{"rank": j, "token_str": name, "is_control": True}
                for j, name in enumerate(["<unk>", "<s>", "</s>", "[INST]", "[/INST]"] + [f"<SPECIAL_{j}>" for j in range(5, 40)])]
    (seed_dir / "tekken.json").write_text(json.dumps({"config": config, "vocab": vocab, "version": 1, "type": "Tekken",
                                                      "special_tokens": specials}))
    make_converted_seed(seed_dir, tok)


#: GPT-2's split regex as tiktoken writes it (r50k_base): the tiktoken reference's pattern.
GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

STACK_FORMATS = ("megatron", "datatrove", "nanogpt")


def _folder_files(folder: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()]


def _stack_files(folder: Path) -> list[tuple[str, bytes]]:
    """The set's files, the one read_stack_file is given first (the token file)."""
    files = _folder_files(folder)
    main = [f for f in files if f[0].endswith((".bin", ".ds")) and not f[0].endswith(".index")]
    main.sort(key=lambda f: len(f[0]))
    return main[:1] + [f for f in files if f not in main[:1]]


def load_surface_seeds(seed_dir: Path) -> dict[str, list[bytes]]:
    read = lambda name: (seed_dir / name).read_bytes()  # noqa: E731
    bin_image = read("tokenizer.bin")
    return {
        "shard_dir": [pack_files(_folder_files(seed_dir / "shards"))],
        "stack": [pack_files(_stack_files(seed_dir / f"stack-{fmt}"), fmt.encode()) for fmt in STACK_FORMATS],
        "pickle": [pack_parts([b"exact", bin_image, b""]), pack_parts([b"exact", bin_image, repr(("seed", {"<|start|>": "<|bos|>"})).encode()])],
        "tekken": [read("tekken.json")],
        "tiktoken_ref": [read("seed.tiktoken")],
        "hf_ref": [read("tokenizer.json")] + ([read("converted.json")] if (seed_dir / "converted.json").exists() else []),
        "url": [pack_files([("tokenizer.bin", bin_image)], b"tokenizer.bin"),
                pack_files([("seed.tiktoken", read("seed.tiktoken"))], b"seed.tiktoken"),
                pack_files([("tokenizer.json", read("tokenizer.json"))], b"tokenizer.json"),
                pack_files([("tekken.json", read("tekken.json"))], b"tekken.json"),
                pack_files([("seed.tok", read("seed.tok"))], b"seed.tok"),
                pack_files(_folder_files(seed_dir / "shards"), b"")],
    }


def _fix_json_checksum(data: bytes) -> bytes:
    """A manifest or sidecar whose "checksum" is made to match its content again (what a careful
    editor, or another tool, does): the checks behind the checksum are reached."""
    from mnemo.fileio import json_checksum

    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return data
    if not isinstance(doc, dict) or "checksum" not in doc:
        return data
    doc.pop("checksum")
    try:
        return json.dumps({**doc, "checksum": json_checksum(doc)}).encode()
    except (TypeError, ValueError):
        return data


def _mutate_file_set(rng: random.Random, files: list[tuple[str, bytes]]) -> tuple[list[tuple[str, bytes]], set[str], bool]:
    """One mutation of a set of files: a file's bytes (a .tok's header CRC or a JSON file's
    checksum fixed most times), a file dropped, copied over another, renamed or added.
    Returns the files, the names whose bytes changed, and whether a JSON file was signed again."""
    files = list(files)
    changed: set[str] = set()
    signed = False
    op = rng.randrange(10)
    i = rng.randrange(len(files)) if files else 0
    if op < 7 and files:
        name, body = files[i]
        if name.endswith(".json"):
            body = mutate_json(rng, body) if rng.random() < 0.7 else mutate_bytes(rng, body)
            if rng.random() < 0.6:
                fixed = _fix_json_checksum(body)
                signed = fixed != body
                body = fixed
        elif name.endswith(".tok"):
            body = mutate_tok(rng, body, [b for n, b in files if n.endswith(".tok")])
        else:
            body = mutate_bytes(rng, body, [b for _, b in files])
        files[i] = (name, body)
        changed.add(name)
    elif op == 7 and files:
        changed.add(files.pop(i)[0])
    elif op == 8 and len(files) > 1:
        j = rng.randrange(len(files))
        files[i] = (files[i][0], files[j][1])
        changed.add(files[i][0])
    else:
        extra = rng.choice([("manifest.json", b"{}"), ("shard-000099.tok", files[i][1] if files else b""),
                            (files[i][0] + ".tmp" if files else "x.tmp", b"partial"), ("data.mnemo.json", b"[" * 100000)])
        files.append(extra)
        changed.add(extra[0])
    return files, changed, signed


def _hf_semantic(rng: random.Random, data: bytes) -> bytes:
    """A tokenizer.json edited as a person would, one that `tokenizers` still reads: another
    pre-tokenizer setting, a normalizer, a merge dropped or moved, an added token's flags, two
    ids swapped.  mnemo must refuse it or encode as `tokenizers` does."""
    try:
        v = json.loads(data)
        model, pre = v["model"], v["pre_tokenizer"]
    except (ValueError, RecursionError, KeyError, TypeError):
        return mutate_bytes(rng, data)
    op = rng.randrange(8)
    try:
        if op == 0:
            step = rng.choice(pre["pretokenizers"]) if isinstance(pre, dict) and "pretokenizers" in pre else pre
            if step.get("type") == "ByteLevel":
                key = rng.choice(["add_prefix_space", "use_regex", "trim_offsets"])
                step[key] = not step.get(key)
            else:
                step["behavior"] = rng.choice(["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"])
                if rng.random() < 0.3:
                    step["invert"] = not step.get("invert")
                if rng.random() < 0.3:
                    step["pattern"] = rng.choice([{"Regex": GPT2_PAT.replace("++", "+")}, {"Regex": r"\s+"}, {"String": " "},
                                                  {"Regex": r" ?\p{L}+|\p{N}"}])
        elif op == 1:
            v["normalizer"] = rng.choice([{"type": "NFC"}, {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "NFD"},
                                          {"type": "Sequence", "normalizers": [{"type": "Strip", "strip_left": True, "strip_right": False}]},
                                          {"type": "Prepend", "prepend": "▁"},
                                          {"type": "Replace", "pattern": {"String": " "}, "content": "Ġ"}])
        elif op == 2 and model["merges"]:
            del model["merges"][rng.randrange(len(model["merges"]))]
        elif op == 3 and len(model["merges"]) > 1:
            i, j = rng.randrange(len(model["merges"])), rng.randrange(len(model["merges"]))
            model["merges"][i], model["merges"][j] = model["merges"][j], model["merges"][i]
        elif op == 4 and v.get("added_tokens"):
            t = rng.choice(v["added_tokens"])
            key = rng.choice(["lstrip", "rstrip", "single_word", "normalized", "special"])
            t[key] = not t.get(key)
        elif op == 5:
            top = max(model["vocab"].values()) + len(v.get("added_tokens") or []) + 1
            v.setdefault("added_tokens", []).append({"id": top, "content": rng.choice(["hello", " world", "ü", "é", "Hello", "<|new|>"]),
                                                     "single_word": rng.random() < 0.3, "lstrip": rng.random() < 0.3,
                                                     "rstrip": rng.random() < 0.3, "normalized": rng.random() < 0.5,
                                                     "special": rng.random() < 0.5})
        elif op == 6:
            model[rng.choice(["ignore_merges", "byte_fallback", "fuse_unk"])] = True
        else:
            names = [k for k, i in model["vocab"].items() if i >= 256]
            a, b = rng.choice(names), rng.choice(names)
            model["vocab"][a], model["vocab"][b] = model["vocab"][b], model["vocab"][a]
    except (KeyError, TypeError, IndexError, AttributeError, ValueError):
        return mutate_bytes(rng, data)
    return json.dumps(v).encode()


def _tekken_semantic(rng: random.Random, data: bytes) -> bytes:
    """A tekken file edited so that mistral-common still reads it: two tokens' ranks swapped, the
    last token dropped, fewer tokens in use, another pattern, fewer or more specials."""
    try:
        v = json.loads(data)
        vocab, config = v["vocab"], v["config"]
        op = rng.randrange(5)
        if op == 0 and len(vocab) > 258:
            i, j = rng.randrange(256, len(vocab)), rng.randrange(256, len(vocab))
            vocab[i]["token_bytes"], vocab[j]["token_bytes"] = vocab[j]["token_bytes"], vocab[i]["token_bytes"]
        elif op == 1 and len(vocab) > 256:
            vocab.pop()
            config["num_vocab_tokens"] = len(vocab)
        elif op == 2:
            config["default_vocab_size"] = rng.randint(config["default_num_special_tokens"] + 256, config["default_vocab_size"])
        elif op == 3:
            # the last two leave text unmatched (white space; a space before a digit): tiktoken,
            # so mistral-common, drops it, mnemo refuses it (_ref_compare)
            config["pattern"] = rng.choice([GPT2_PAT.replace("++", "+"), r"\s+|\S+", r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+",
                                            r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+", r"\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]"])
        else:
            n = rng.choice([5, 20, 39, 41, 60])
            config["default_num_special_tokens"] = n
            v["special_tokens"] = [{"rank": j, "token_str": t["token_str"] if j < len(v["special_tokens"]) else f"<SPECIAL_{j}>",
                                    "is_control": True} for j, t in enumerate(v["special_tokens"][:n] + [{"token_str": ""}] * max(0, n - len(v["special_tokens"])))]
        return json.dumps(v).encode()
    except (ValueError, RecursionError, KeyError, TypeError, IndexError, AttributeError):
        return mutate_bytes(rng, data)


def _tiktoken_semantic(rng: random.Random, data: bytes) -> bytes:
    """A rank file tiktoken still reads: two multi-byte tokens' ranks swapped, a line dropped, a
    token appended that joins two others."""
    lines = [line for line in data.split(b"\n") if line]
    op = rng.randrange(3)
    try:
        multi = [k for k, line in enumerate(lines) if len(base64.b64decode(line.split(b" ")[0])) > 1]
        if op == 0 and len(multi) > 1:
            i, j = rng.choice(multi), rng.choice(multi)
            (ti, ri), (tj, rj) = lines[i].split(b" "), lines[j].split(b" ")
            lines[i], lines[j] = ti + b" " + rj, tj + b" " + ri
        elif op == 1 and multi:
            del lines[rng.choice(multi)]
        elif lines:
            a, b = (base64.b64decode(lines[rng.randrange(len(lines))].split(b" ")[0]) for _ in range(2))
            top = max(int(line.split(b" ")[1]) for line in lines)
            lines.append(base64.b64encode(a + b) + b" " + str(top + 1).encode())
    except (ValueError, IndexError):  # binascii.Error is a ValueError: a line already mutated
        return mutate_bytes(rng, data)
    return b"\n".join(lines) + b"\n"


def mutate_surface(rng: random.Random, target: str, data: bytes, others: Sequence[bytes]) -> bytes:
    if target == "shard_dir":
        head, files = unpack_files(data)
        files, changed, signed = _mutate_file_set(rng, files)
        return pack_files(files, b"signed" if signed or head == b"signed" else b"")
    if target == "stack":
        head, files = unpack_files(data)
        fmt, _, body = head.decode().partition(":")
        main = files[0][0] if files else ""
        files, changed, _ = _mutate_file_set(rng, files)
        if not files or files[0][0] != main:
            files = [(main, b"")] + files if main and all(n != main for n, _ in files) else files
        touched = "body" if main in changed or body == "body" else ""
        return pack_files(files, f"{fmt}:{touched}".encode())
    if target == "pickle":
        head, image, state = (unpack_parts(data) + [b"", b"", b""])[:3]
        if rng.random() < 0.7:
            image = mutate_bytes(rng, image)
            if rng.random() < 0.5:
                image, head = fix_bin_crc(image), b""
        else:
            state = repr(rng.choice([("seed", {"<|start|>": "<|bos|>"}), (None, {}), ("x", 5), 5, ("n", {"a": "<|nope|>"}),
                                     (rng.choice(HOSTILE_VALUES), {rng.choice(["<|a|>", "", "\ud800"]): rng.choice(HOSTILE_VALUES)}),
                                     ("seed", {"<|bos|>": "<|eos|>"}), ("a" * 300, {}), ("seed", {"<|x|>": "<|x|>"})])).encode()
        return pack_parts([head, image, state])
    # the reference targets: half the time an edit the reference still reads (what is compared)
    if target == "tekken":
        if rng.random() < 0.5:
            return _tekken_semantic(rng, data)
        return mutate_json(rng, data) if rng.random() < 0.8 else mutate_bytes(rng, data, others)
    if target == "tiktoken_ref":
        return _tiktoken_semantic(rng, data) if rng.random() < 0.5 else mutate_lines(rng, data, _tiktoken_fields)
    if target == "hf_ref":
        if rng.random() < 0.5:
            return _hf_semantic(rng, data)
        return mutate_json(rng, data) if rng.random() < 0.8 else mutate_bytes(rng, data, others)
    if target == "url":
        head, files = unpack_files(data)
        if rng.random() < 0.3:
            head = rng.choice([head + b"/", b"", b"missing.bin", head + b"x", b"nested/" + head, head.upper()])
        elif files:
            files, _, _ = _mutate_file_set(rng, files)
        return pack_files(files, head)
    raise ValueError(f"no mutator for {target!r}")


# ---- generated cases: stream decoders, offsets, iterator states --------------------------------

#: Ids worth decoding: multi-byte characters' pieces, specials, the ends of the id space, the
#: chat mask bits, and ids that are no token.
def _interesting_ids(rng: random.Random, n_vocab: int) -> list[int]:
    return [rng.randrange(n_vocab) for _ in range(8)] + list(range(0xC2, 0xC6)) + [0x80, 0xBF, 0xE4, 0xF0, 0x9F, 0xFF,
            n_vocab - 1, n_vocab, n_vocab + 5, 0x7FFF, 0x8000, 0x8000 + 65, 65535, 65536, 2**31, -1, 2**63]


def random_stream_case(rng: random.Random, n_vocab: int = 332) -> bytes:
    pool = _interesting_ids(rng, n_vocab)
    ids = [rng.choice(pool) if rng.random() < 0.3 else rng.randrange(256) for _ in range(rng.randint(0, 24))]
    if rng.random() < 0.6:  # mostly valid ids, so that the joined text is what is compared
        ids = [i % n_vocab if isinstance(i, int) and i >= 0 else 65 for i in ids]
    cuts = sorted(rng.sample(range(len(ids) + 1), rng.randint(0, min(6, len(ids) + 1))))
    errors = rng.choice(["replace", "replace", "strict", "ignore", "backslashreplace", "surrogateescape", "nope", 5])
    masked = rng.random() < 0.2
    if masked and rng.random() < 0.7:
        ids = [i | 0x8000 if rng.random() < 0.5 else i for i in ids]
    return repr({"ids": ids, "cuts": cuts, "errors": errors, "masked": masked}).encode()


_TEXT_PIECES = ["hello", " world", "😀", "\ud83d\ude00", "\ud83d", "\ude00", "é", "e\u0301", "你好", " ", "  ", "\n",
                "<|bos|>", "<|eos|>", "ﬁ", "𝔸", "'s", "123", "\x00", "\u2028", "Ä"]


def random_offsets_case(rng: random.Random, n_vocab: int = 332) -> bytes:
    if rng.random() < 0.5:
        pool = _interesting_ids(rng, n_vocab)
        ids = [rng.choice(pool) if rng.random() < 0.15 else rng.randrange(n_vocab) for _ in range(rng.randint(0, 20))]
        return repr({"ids": ids}).encode()
    return repr({"text": "".join(rng.choice(_TEXT_PIECES) for _ in range(rng.randint(0, 16)))}).encode()


def random_iterator_case(rng: random.Random) -> bytes:
    cfg = {"context": rng.choice([4, 8, 16]), "batch_size": rng.choice([1, 2, 3, 5]), "seed": rng.choice([0, 1, 7, 2**40])}
    if rng.random() < 0.5:
        cfg["stride"] = rng.choice([1, 3, cfg["context"]])
    if rng.random() < 0.4:
        cfg["world_size"] = rng.choice([1, 2, 3])
        cfg["rank"] = rng.randrange(cfg["world_size"])
    if rng.random() < 0.3:
        cfg["num_workers"] = rng.choice([1, 2])
        cfg["worker"] = rng.randrange(cfg["num_workers"])
    edit: dict[str, Any] = {}
    keys = ["version", "n_windows", "context", "stride", "batch_size", "seed", "shard", "n_shards", "position"]
    for _ in range(rng.choice([0, 1, 1, 2])):
        key = rng.choice(keys + ["position"] * 4 + ["extra"])
        edit[key] = rng.choice(INTERESTING_INTS + [rng.randrange(200), None, "3", 1.5, True, [], {}])
    return repr({"cfg": cfg, "steps": rng.randint(0, 30), "edit": edit}).encode()


GENERATED = {"stream": random_stream_case, "offsets": random_offsets_case, "iterator": random_iterator_case}


# ---- hostile API calls -------------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [None, True, False, 0, 1, -1, 2, 255, 256, 65535, 65536, 2**31, 2**63 - 1, 2**63,
                             -(2**63), 10**30, 1.5, -0.0, {"$float": "inf"}, {"$float": "nan"}, "", "x", "\ud800", "<|bos|>", "all",
                             "a" * 1000, b"", b"x", b"\xff", [], [1, 2], [-1], [2**70], [1.5], ["a"], [None],
                             [b"x"], ["\ud800"], {}, {"a": 1}, (1, 2), {1}, [[1]], {"$u16": b"\x01\x00\x02\x00"},
                             {"$i64": 4}, {"$strided": b"abcdefgh"}]


def _text_value(rng: random.Random) -> Any:
    return rng.choice(["Hello world", "<|bos|> hi", "", "\ud800", "é" * 50, "a\x00b", "😀"] + HOSTILE_VALUES)


def random_api_call(rng: random.Random) -> bytes:
    """One call with a few arguments hostile (wrong types, extremes) and the rest sensible."""
    h = lambda: rng.choice(HOSTILE_VALUES)  # noqa: E731
    pick = lambda sane: sane if rng.random() < 0.5 else h()  # noqa: E731
    fn = rng.choice(list(API_PARAMS))
    if fn in ("encode", "encode_batch"):
        kwargs = {}
        if rng.random() < 0.5:
            kwargs["allowed_special"] = pick("all")
        if rng.random() < 0.5:
            kwargs["disallowed_special"] = pick(())
        first = _text_value(rng) if fn == "encode" else rng.choice([[_text_value(rng) for _ in range(3)], h()])
        if fn == "encode_batch":
            kwargs["workers"] = rng.choice([1, 1, 1, 0, -1, 1.5, "2", None if rng.random() < 0.1 else 1])
        return api_payload(fn, [first], kwargs)
    if fn == "encode_ordinary":
        return api_payload(fn, [_text_value(rng)])
    if fn in ("decode", "decode_bytes"):
        tokens = rng.choice([[1, 2, 300], h(), [rng.choice(HOSTILE_VALUES)], list(range(0, 400, 7))])
        kwargs = {"errors": pick("strict")} if fn == "decode" and rng.random() < 0.3 else {}
        return api_payload(fn, [tokens], kwargs)
    if fn == "token_bytes":
        return api_payload(fn, [rng.choice([0, 255, 300, 331, 332] + HOSTILE_VALUES)])
    if fn == "encode_documents":
        docs = rng.choice([[b"hello", b"world"], h(), [h(), b"x"], ["text"]])
        kwargs = {"bos": pick(rng.choice([None, 0, 316]))} if rng.random() < 0.7 else {}
        return api_payload(fn, [docs], kwargs)
    if fn in ("train", "train_from_iterator"):
        inputs = rng.choice([{"$iter": ["hello world hello world"] * 3}, {"$iter": [b"abc abc abc"]},
                             {"$iter": [h(), "hello hello"]}, {"$iter": []}, h(), [h()], []])
        if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], str)):
            # a str is a path: only names that do not exist in the worker's scratch folder
            inputs = ["no-such-file-" + str(inputs)[:50]]
        # documents go to train_from_iterator, anything else to train (files), as a user would
        fn = "train_from_iterator" if isinstance(inputs, dict) and "$iter" in inputs else "train"
        kwargs = {"vocab_size": pick(rng.choice([280, 300]))}
        for key, sane in (("pattern", "gpt2"), ("special_tokens", ["<|x|>"]), ("tie", "bytes"),
                          ("algorithm", "naive"), ("max_chunk_bytes", 16), ("verify", False), ("text_field", "t")):
            if key not in API_PARAMS[fn]:
                continue
            if rng.random() < 0.25:
                kwargs[key] = pick(sane)
        kwargs["workers"] = rng.choice([1, 1, 1, 0, -1, 1.5, "2", 2**63])
        return api_payload(fn, [inputs], kwargs)
    if fn == "memeq":
        args: list[Any] = [b"abcdefgh", 0, b"abcdefgh", 0, 8]
    else:
        fourth: Any = {"$i64": 8} if fn == "pair_scan" else 8
        args = [{"$u16": b"\x01\x00\x02\x00\x01\x00\x02\x00"}, 1, 2, fourth, 0, -1]
        del args[rng.randint(4, 6) :]
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(args))
        args[i] = rng.choice(INTERESTING_INTS + HOSTILE_VALUES)
    return api_payload(fn, args)


def random_case(rng: random.Random, seeds: dict[str, list[bytes]], targets: Sequence[str] = TARGETS) -> tuple[str, bytes]:
    target = rng.choices(targets, [TARGET_WEIGHTS.get(t, 1.0) for t in targets])[0]
    if target == "api":
        return target, random_api_call(rng)
    if target in GENERATED:
        return target, GENERATED[target](rng)
    pool = seeds[target]
    data = rng.choice(pool)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        data = mutate(rng, target, data, pool)
    return target, data


# ---- hypothesis-driven cases ------------------------------------------------------------------


def hypothesis_strategies(seeds: dict[str, list[bytes]]) -> dict[str, Any]:
    """A hypothesis strategy of payloads per target: structure-level generators (tokenizer.bin
    fields, .tok headers, rank lines, JSON trees in the seed's skeleton, API argument mixes)."""
    from hypothesis import strategies as st

    ints = st.one_of(st.integers(-5, 70000), st.sampled_from(INTERESTING_INTS))

    def tokenizer_bin_v3(draw: Any, merges: list[tuple[int, int]], specials: list[str], flags: int) -> bytes:
        """A version-3 image from the same fields: sections in any order, some dropped, doubled
        or unknown, lengths, widths and flags now and then wrong; a right CRC most of the time."""
        width = draw(st.sampled_from([2, 2, 4, 3]))
        n_ids = 256 + len(merges) + len(specials)
        names = [s.encode("utf-8", "surrogatepass")[:255] for s in specials]
        fmt = "H" if width == 2 else "I"
        ids = lambda values: struct.pack(f"<{len(values)}{fmt}", *(v % (1 << (8 * min(width, 4))) for v in values))  # noqa: E731
        sections = [
            (b"MRGS", 1, struct.pack("<II", width, len(merges)) + ids([x for pair in merges for x in pair])),
            (b"SPEC", 1, struct.pack("<I", len(names)) + b"".join(bytes([len(n)]) + n for n in names)),
            (b"PATN", 1, struct.pack("<H", 4) + draw(st.sampled_from([b"gpt2", b"gpt4", b"gpt5", b"\xff\xfe12"]))
             + struct.pack("<H", 0)),
            (b"TIER", 1, draw(st.sampled_from([b"\x02id", b"\x05bytes", b"\x02ix", b"\x09id"]))),
        ]
        if flags & 1:
            sections.append((b"CNTS", 0, draw(st.binary(min_size=8 * len(merges), max_size=8 * len(merges)))))
        if flags & 2:
            perm = list(range(n_ids))
            draw(st.randoms(use_true_random=False)).shuffle(perm)
            sections.append((b"IDMP", 0, ids(perm)))
        if draw(st.booleans()):
            sections.append((b"ENCT", 0, struct.pack("<II", draw(st.sampled_from([1, 1, 2])), len(merges))
                             + draw(st.binary(min_size=(len(merges) + 7) // 8, max_size=(len(merges) + 7) // 8))))
        sections.append((b"WRTR", 0, draw(st.sampled_from([b"mnemo 0.1.0", b"other", b"\xff"]))))
        if draw(st.booleans()):
            sections.append((draw(st.sampled_from([b"XTRA", b"RANK", b"MRGS"])), draw(st.sampled_from([0, 1, 2])), b"x" * 5))
        sections = draw(st.permutations(sections)) if draw(st.booleans()) else sections
        body = b"".join(tag + struct.pack("<IQ", fl, (len(payload) + draw(st.sampled_from([0] * 8 + [1, -1]))) % (1 << 64))
                        + payload + bytes(-len(payload) % 8) for tag, fl, payload in sections)
        count = len(sections) + draw(st.sampled_from([0] * 6 + [1, -1]))
        head = struct.pack("<8sHHIQ", b"MNEMOBPE", 3, 0, count % (1 << 32), 32 + len(body) + draw(st.sampled_from([0] * 6 + [1])))
        image = head + bytes(8) + body
        return fix_bin_crc(image) if draw(st.integers(0, 9)) else image

    @st.composite
    def tokenizer_bin(draw: Any) -> bytes:
        n_merges = draw(st.integers(0, 40))
        merges = draw(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=n_merges,
                               max_size=n_merges))
        specials = draw(st.lists(st.text(max_size=6), max_size=6))
        spec = b"".join(bytes([min(len(s.encode("utf-8", "surrogatepass")), 255)]) +
                        s.encode("utf-8", "surrogatepass")[:255] for s in specials)
        flags = draw(st.sampled_from([0, 1, 2, 3, 4]))
        body = b"".join(struct.pack("<HH", a, b) for a, b in merges) + spec
        if flags & 1:
            body += draw(st.binary(min_size=8 * n_merges, max_size=8 * n_merges))
        if flags & 2:
            n_ids = 256 + n_merges + len(specials)
            if draw(st.booleans()):  # a permutation: gets past the id map's own checks
                perm = list(range(n_ids))
                draw(st.randoms(use_true_random=False)).shuffle(perm)
                body += struct.pack(f"<{n_ids}H", *perm)
            else:
                body += draw(st.binary(min_size=2 * n_ids, max_size=2 * n_ids))
        if draw(st.booleans()):
            return tokenizer_bin_v3(draw, merges, specials, flags)
        head = struct.pack("<8sHHIHBBIII", b"MNEMOBPE", draw(st.sampled_from([1, 1, 1, 0, 2])), flags,
                           draw(st.sampled_from([n_merges] * 4 + [n_merges + 1, 0xFFFF])),
                           draw(st.sampled_from([len(specials)] * 4 + [len(specials) + 1, 65280])),
                           draw(st.integers(0, 3)), draw(st.integers(0, 2)),
                           draw(st.sampled_from([len(spec)] * 4 + [len(spec) + 1, 0])), zlib.crc32(body), 0)
        return head + body

    @st.composite
    def tok(draw: Any) -> bytes:
        width = draw(st.sampled_from([2, 4, 2, 0, 3]))
        n = draw(st.integers(0, 64))
        fp = draw(st.sampled_from([seeds["tok"][0][32:48], bytes(16)]))
        head = struct.pack("<8sHHIQQ16sI12s", draw(st.sampled_from([b"MNEMOTOK", b"MNEMOTOX"])),
                           draw(st.sampled_from([1, 1, 2])), width, draw(st.sampled_from([0, 1, 2, 3, 4])),
                           draw(st.sampled_from([n, n, n + 1, 2**64 - 1, 2**63])),
                           draw(st.sampled_from([0, 1, 2**64 - 1])), fp, draw(st.sampled_from([332, 0, 2**32 - 1])),
                           draw(st.sampled_from([bytes(12), b"\x01" * 12])))
        return head + draw(st.binary(min_size=n * max(width, 1), max_size=n * max(width, 1)))

    rank = st.one_of(ints.map(lambda v: str(v).encode()), st.sampled_from(["²".encode(), b"", b"x", b"1.0"]))
    tiktoken = st.lists(st.tuples(st.binary(min_size=0, max_size=12), rank), max_size=300).map(
        lambda lines: b"\n".join(base64.b64encode(t) + b" " + r for t, r in lines))
    tiktoken_grown = st.tuples(st.sampled_from(seeds["tiktoken"]), tiktoken).map(lambda p: p[0] + p[1])

    json_value = st.recursive(
        st.one_of(st.none(), st.booleans(), ints, st.floats(allow_nan=False), st.text(max_size=8)),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
        max_leaves=12,
    )
    hf_seed = json.loads(seeds["hf"][0])
    hf_paths = _json_paths(hf_seed)

    @st.composite
    def hf(draw: Any) -> bytes:
        value = json.loads(seeds["hf"][0])
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(hf_paths))
            try:
                value = _set_path(value, path, draw(json_value))
            except (KeyError, IndexError, TypeError):
                pass
        return json.dumps(value).encode()

    @st.composite
    def gpt2(draw: Any) -> bytes:
        vocab = draw(st.dictionaries(st.text(max_size=4), st.one_of(st.integers(-2, 400), json_value), max_size=40))
        base = json.loads(unpack_parts(seeds["gpt2"][0])[0])
        if draw(st.booleans()):
            base.update(vocab)
            vocab = base
        merges = draw(st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=30))
        seed_merges = unpack_parts(seeds["gpt2"][0])[1]
        text = "\n".join(f"{a} {b}" for a, b in merges).encode("utf-8", "surrogatepass")
        return pack_parts([json.dumps(vocab).encode(), seed_merges + text if draw(st.booleans()) else text])

    api = st.randoms(use_true_random=False).map(random_api_call)

    def mutated(target: str) -> Any:
        """A seed of `target` through one to three mutations, the choices hypothesis's."""
        def build(rng: random.Random) -> bytes:
            data = rng.choice(seeds[target])
            for _ in range(rng.choice([1, 1, 2, 3])):
                data = mutate(rng, target, data, seeds[target])
            return data
        return st.randoms(use_true_random=False).map(build)

    surfaces = {t: mutated(t) for t in ("shard_dir", "stack", "pickle", "tekken", "tiktoken_ref", "hf_ref", "url")}
    surfaces |= {t: st.randoms(use_true_random=False).map(gen) for t, gen in GENERATED.items()}
    return {**surfaces, "tokenizer_bin": tokenizer_bin(), "tok": tok(), "tiktoken": st.one_of(tiktoken, tiktoken_grown),
            "hf": hf(), "gpt2": gpt2(), "api": api}


def run_hypothesis(runner: Runner, seeds: dict[str, list[bytes]], target: str, examples: int,
                   derandomize: bool) -> None:
    """Feed `examples` hypothesis-generated payloads of one target through the runner (findings
    are kept by the runner, not raised: one defect must not stop the search for others)."""
    from hypothesis import HealthCheck, given, settings

    strategy = hypothesis_strategies(seeds)[target]

    @settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def one(data: bytes) -> None:
        if not STOPPED:
            runner.run(target, data)

    one()


# ---- the time-bounded run (make fuzz) --------------------------------------------------------

#: The signal that asked `make fuzz` to stop (SIGTERM, or Ctrl-C): the run ends after the case in
#: hand, reports and cleans up.  A SystemExit raised by the handler itself had landed inside
#: hypothesis's generation of an example, which reported it as a failure of its own
#: ("Inconsistent data generation") in a traceback of a page, and the run exited 1.
STOPPED: list[int] = []


def _stop(signum: int, frame: object) -> None:
    STOPPED.append(signum)
    signal.signal(signum, signal.SIG_DFL)  # a second one stops at once


def fuzz_for(seconds: float, seed_dir: Path, rng_seed: int, out: Path | None, log: Callable[[str], None],
             targets: Sequence[str] = TARGETS) -> Runner:
    seeds = load_seeds(seed_dir)
    server = start_s3_here() if "url" in targets else None
    runner = Runner(seed_dir)
    rng = random.Random(rng_seed)
    end = time.monotonic() + seconds
    last_report = time.monotonic()
    written: dict[str, Path] = {}

    def save() -> None:
        for sig, finding in runner.findings.items():
            if sig not in written:
                log(f"finding: {finding.describe()[:300]}")
            if out is None:
                written[sig] = Path()
                continue
            folder = write_reproducer(out, finding)
            old = written.get(sig)
            if old is not None and old != folder:  # a smaller input took its place
                shutil.rmtree(old, ignore_errors=True)
            written[sig] = folder

    def tick() -> None:
        nonlocal last_report
        if time.monotonic() - last_report > 30:
            last_report = time.monotonic()
            save()
            log(f"{runner.cases} cases, {len(runner.findings)} distinct findings, {runner.restarts} restarts")

    try:
        while time.monotonic() < end and not STOPPED:
            # alternate: a burst of mutation cases, then a burst of hypothesis cases per target
            for _ in range(500):
                if time.monotonic() >= end or STOPPED:
                    break
                runner.run(*random_case(rng, seeds, targets))
                tick()
            for target in targets:
                if time.monotonic() >= end or STOPPED:
                    break
                run_hypothesis(runner, seeds, target, max(1, int(40 * TARGET_WEIGHTS.get(target, 1.0))), derandomize=False)
                tick()
    finally:
        runner.close()
        if server is not None:
            server.stop()
        save()
    return runner


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("SEED_DIR", "SCRATCH", "PARENT_PID"), help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to fuzz (default 600)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="where reproducers go")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--replay", type=Path, nargs="*", help="run these reproducer folders once and report")
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS), help="fuzz only these targets")
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    # SIGTERM (a killed `make fuzz`) and Ctrl-C end the run after the case in hand: the worker is
    # closed, the findings written, the seeds removed; the exit status says the signal
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    seed = args.seed if args.seed is not None else int(time.time())
    log = lambda msg: print(f"[fuzz {time.strftime('%H:%M:%S')}] {msg}", flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="mnemo-fuzz-seeds-") as tmp:
        seed_dir = Path(tmp)
        make_seeds(seed_dir)
        if args.replay is not None:
            server = start_s3_here()
            runner = Runner(seed_dir)
            bad = 0
            for folder in args.replay:
                target, data = read_reproducer(folder)
                outcome = runner.run(target, data)
                bad += not outcome.passed
                log(f"{folder}: {outcome.kind} in {outcome.seconds:.2f} s {outcome.detail[:300]}")
            runner.close()
            server.stop()
            return 1 if bad else 0
        log(f"fuzzing for {args.seconds:g} s, seed {seed}, reproducers to {args.out}/")
        runner = fuzz_for(args.seconds, seed_dir, seed, args.out, log, args.targets)
    if STOPPED:
        log(f"stopped by signal {STOPPED[0]} after {runner.cases} cases")
    log(f"done: {runner.cases} cases, {runner.restarts} worker restarts, {len(runner.findings)} distinct findings")
    for line in runner.count_lines():
        log(f"  {line}")
    for finding in runner.findings.values():
        log(f"  {finding.describe()[:400]} (seen {finding.count} times)")
    if STOPPED:
        return 128 + STOPPED[0]
    return 1 if runner.findings else 0


if __name__ == "__main__":
    sys.exit(main())
