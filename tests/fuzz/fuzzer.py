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

TARGETS = ("tokenizer_bin", "tok", "gpt2", "tiktoken", "hf", "api")
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
}

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
    else:
        raise RuntimeError(f"unknown fuzz target {target!r}")


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
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(seed_dir), self.scratch,
             str(os.getpid())],
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


def write_reproducer(folder: Path, finding: Finding) -> Path:
    """A folder per finding: the input file(s), `target` and `description.txt` (one line).  Copy
    the folder into tests/fuzz/regressions/ to make it a regression case."""
    digest = hashlib.sha1(finding.target.encode() + finding.data).hexdigest()[:12]
    out = folder / f"{finding.target}-{digest}"
    out.mkdir(parents=True, exist_ok=True)
    parts = unpack_parts(finding.data) if finding.target == "gpt2" else [finding.data]
    for name, part in zip(FILE_NAMES[finding.target], parts):
        (out / name).write_bytes(part)
    (out / "target").write_text(finding.target + "\n")
    (out / "description.txt").write_text(f"{finding.describe()} (seen {finding.count} times)\n")
    return out


def read_reproducer(folder: Path) -> tuple[str, bytes]:
    """(target, payload) of a reproducer folder (a finding or a regression case)."""
    target = (folder / "target").read_text().strip()
    parts = [(folder / name).read_bytes() for name in FILE_NAMES[target]]
    return target, pack_parts(parts) if target == "gpt2" else parts[0]


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


def load_seeds(seed_dir: Path) -> dict[str, list[bytes]]:
    read = lambda name: (seed_dir / name).read_bytes()  # noqa: E731
    return {
        "tokenizer_bin": [read("tokenizer.bin"), read("tokenizer_v1.bin")],
        "tok": [read("seed.tok"), read("chat.tok")],
        "gpt2": [pack_parts([read("vocab.json"), read("merges.txt")])],
        "tiktoken": [read("seed.tiktoken")],
        "hf": [read("tokenizer.json")],
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
    raise ValueError(f"no mutator for {target!r}")


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


def random_case(rng: random.Random, seeds: dict[str, list[bytes]]) -> tuple[str, bytes]:
    target = rng.choice(TARGETS)
    if target == "api":
        return target, random_api_call(rng)
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
    return {"tokenizer_bin": tokenizer_bin(), "tok": tok(), "tiktoken": st.one_of(tiktoken, tiktoken_grown),
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
        runner.run(target, data)

    one()


# ---- the time-bounded run (make fuzz) --------------------------------------------------------


def fuzz_for(seconds: float, seed_dir: Path, rng_seed: int, out: Path | None, log: Callable[[str], None]) -> Runner:
    seeds = load_seeds(seed_dir)
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
        while time.monotonic() < end:
            # alternate: a burst of mutation cases, then a burst of hypothesis cases per target
            for _ in range(500):
                if time.monotonic() >= end:
                    break
                runner.run(*random_case(rng, seeds))
                tick()
            for target in TARGETS:
                if time.monotonic() >= end:
                    break
                run_hypothesis(runner, seeds, target, 40, derandomize=False)
                tick()
    finally:
        runner.close()
        save()
    return runner


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("SEED_DIR", "SCRATCH", "PARENT_PID"), help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to fuzz (default 600)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="where reproducers go")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--replay", type=Path, nargs="*", help="run these reproducer folders once and report")
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    # SIGTERM (a killed `make fuzz`) unwinds like Ctrl-C: the worker is closed, the seeds removed
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    seed = args.seed if args.seed is not None else int(time.time())
    log = lambda msg: print(f"[fuzz {time.strftime('%H:%M:%S')}] {msg}", flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="mnemo-fuzz-seeds-") as tmp:
        seed_dir = Path(tmp)
        make_seeds(seed_dir)
        if args.replay is not None:
            runner = Runner(seed_dir)
            bad = 0
            for folder in args.replay:
                target, data = read_reproducer(folder)
                outcome = runner.run(target, data)
                bad += not outcome.passed
                log(f"{folder}: {outcome.kind} in {outcome.seconds:.2f} s {outcome.detail[:300]}")
            runner.close()
            return 1 if bad else 0
        log(f"fuzzing for {args.seconds:g} s, seed {seed}, reproducers to {args.out}/")
        runner = fuzz_for(args.seconds, seed_dir, seed, args.out, log)
    log(f"done: {runner.cases} cases, {runner.restarts} worker restarts, {len(runner.findings)} distinct findings")
    for finding in runner.findings.values():
        log(f"  {finding.describe()[:400]} (seen {finding.count} times)")
    return 1 if runner.findings else 0


if __name__ == "__main__":
    sys.exit(main())
