"""The fuzz suite's bounded slice (`make test`) and its fixed regression cases.

Every case runs in a long-lived child process (fuzzer.Worker): a crash or a hang is observed and
reported with its input, never suffered by pytest.  The oracle (fuzzer.classify): success or a
MnemoError; for API arguments also a TypeError/ValueError naming an argument; within
fuzzer.CASE_TIMEOUT seconds.  `make fuzz` runs the same cases for as long as it is given
(docs/fuzzing.md).
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import fuzzer
import mnemo
from mnemo import vocabfile

pytestmark = pytest.mark.fuzz

#: Cases per target in the seeded slice: mutations of the seed files, then hypothesis examples.
SLICE_MUTATIONS = 400
SLICE_HYPOTHESIS = 60
#: A hang costs the whole time bound; past this many in one target the slice stops and reports.
SLICE_MAX_HANGS = 2
#: Fewer cases for the slow surfaces (a few seconds each): URLs go through the S3 server, the
#: references build a tiktoken or Tekkenizer per case.
SLICE_SIZES = {"url": 12, "tekken": 60, "tiktoken_ref": 150, "hf_ref": 100, "shard_dir": 200, "stack": 200}


@pytest.fixture
def fresh_runner(seed_dir: Path, s3_env: None) -> Iterator[fuzzer.Runner]:
    r = fuzzer.Runner(seed_dir, confirm=False)
    yield r
    r.close()


def report(runner: fuzzer.Runner) -> str:
    return "\n".join(f"- {f.describe()[:600]} (seen {f.count} times)" for f in runner.findings.values())


# ---- the harness itself ------------------------------------------------------------------------


def test_worker_observes_crash_hang_and_stray_exception(seed_dir: Path) -> None:
    """A segfault, a hang, an exit and a KeyError are findings; the runner restarts its worker
    after each and goes on; a MnemoError passes."""
    r = fuzzer.Runner(seed_dir, timeout=2.0)
    try:
        call = lambda what: r.run("api", fuzzer.api_payload("selftest", [what]))  # noqa: E731
        assert call("mnemo").kind == "error"
        segv = call("segv")
        assert segv.kind == "crash" and "signal 11" in segv.detail
        assert call("mnemo").kind == "error"  # a new worker took over
        assert call("hang").kind == "hang"
        assert call("exit").kind == "crash"
        bad = call("keyerror")
        assert bad.kind == "bad" and "KeyError" in bad.detail
        assert call("ok").kind == "ok"
        assert r.restarts == 3
        assert all(f.confirmed for f in r.findings.values())
    finally:
        r.close()


def test_workers_leave_no_temporary_files(seed_dir: Path, seeds: dict[str, list[bytes]], s3_env: None,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The URL cases read .tok files through mnemo's local copies, in a folder its exit hook
    removes; the worker is killed, never exits, so the copies went to TMPDIR and stayed there
    (one folder a `make test` in /tmp).  A worker's TMPDIR is its scratch folder, which close()
    removes: nothing of the run is left in the caller's TMPDIR."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    r = fuzzer.Runner(seed_dir, confirm=False)
    try:
        for data in seeds["url"]:
            assert r.run("url", data).passed
        assert r.worker is not None and r.restarts == 0
        assert any(p.name.startswith("mnemo-copies-") for p in Path(r.worker.scratch).iterdir())
    finally:
        r.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_make_fuzz_stops_cleanly_on_a_signal_to_its_group(sig: int, tmp_path: Path) -> None:
    """`make fuzz` killed (SIGTERM to its process group, as `timeout` sends it) or Ctrl-C'd (SIGINT
    to the terminal's group): it ends after the case in hand with the signal's status, reports,
    and leaves nothing behind.  Before, the handler's SystemExit landed inside hypothesis's
    generation of an example, which reported a page of "Inconsistent data generation" and exit
    1, and the worker, killed by the same signal, was reported as a crash of its case."""
    out = tmp_path / "findings"
    proc = subprocess.Popen(
        [sys.executable, str(Path(fuzzer.__file__)), "--seconds", "120", "--targets", "gpt2", "api", "hf",
         "--seed", "7", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "fuzzing for" in line:
            break
    time.sleep(3)  # into the cases: mutations and hypothesis's examples
    os.killpg(proc.pid, sig)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, rest
    assert f"stopped by signal {int(sig)}" in rest and "Traceback" not in rest, rest
    # the case in hand when the signal came is not a finding (other findings are the fuzzer's
    # business, not this test's: its hypothesis examples are not derandomized)
    written = [f.read_text() for f in out.glob("*/description.txt")] if out.exists() else []
    assert all(f"killed by signal {int(sig)}" not in text and "KeyboardInterrupt" not in text
               for text in [rest, *written]), rest
    # tiktoken keeps its own cache in TMPDIR (data-gym-cache), meant to stay; nothing of the run's
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in ("findings", "data-gym-cache")) == []


def test_reproducer_round_trip(tmp_path: Path, seeds: dict[str, list[bytes]]) -> None:
    """A finding is written as plain files (never pickle) and read back as the same case."""
    for target, data in [("gpt2", seeds["gpt2"][0]), ("hf", seeds["hf"][0]),
                         ("api", fuzzer.api_payload("encode", [None]))]:
        finding = fuzzer.Finding(target, data, fuzzer.Outcome("bad", "KeyError: x (at mnemo/x.py:1)"), True)
        folder = fuzzer.write_reproducer(tmp_path, finding)
        assert fuzzer.read_reproducer(folder) == (target, data)
        assert (folder / "description.txt").read_text().count("\n") == 1


def test_oracles_flag_a_silently_different_answer(seed_dir: Path, seeds: dict[str, list[bytes]],
                                                  fresh_runner: fuzzer.Runner) -> None:
    """The differential oracles compare answers, not just exceptions: an input that loads as
    something else while its flag says it must not is a `Differs` finding.  (The flags lie here
    on purpose: the fuzzer sets them from what it mutated.)"""
    import zlib

    other = mnemo.train_from_iterator(["a different corpus entirely, zzz"] * 20, vocab_size=280, workers=1)
    pickled = fuzzer.pack_parts([b"exact", other.to_bytes(), b""])
    outcome = fresh_runner.run("pickle", pickled)
    assert outcome.kind == "bad" and "Differs" in outcome.detail, outcome
    # a shard whose tokens, their CRC, the header's CRC and the signed manifest all agree, but
    # with other ids: opens and verifies, so only the comparison with the seed can see it
    head, files = fuzzer.unpack_files(seeds["shard_dir"][0])
    names = [n for n, _ in files]
    k = names.index("shard-000000.tok")
    tok = bytearray(files[k][1])
    tok[64] ^= 1
    tok[52:56] = zlib.crc32(bytes(tok[64:])).to_bytes(4, "little")
    tok = bytearray(fuzzer.fix_tok_crc(bytes(tok)))
    manifest = json.loads(dict(files)["manifest.json"])
    for shard in manifest["shards"]:
        if shard["name"] == "shard-000000.tok":
            shard["crc32"] = zlib.crc32(bytes(tok[64:]))
    files[k] = ("shard-000000.tok", bytes(tok))
    files[names.index("manifest.json")] = ("manifest.json", fuzzer._fix_json_checksum(json.dumps(manifest).encode()))
    outcome = fresh_runner.run("shard_dir", fuzzer.pack_files(files))
    assert outcome.kind == "bad" and "Differs" in outcome.detail, outcome
    assert fresh_runner.run("shard_dir", fuzzer.pack_files(files, b"signed")).kind == "ok"


# ---- the seeded slice ----------------------------------------------------------------------------


@pytest.mark.parametrize("target", fuzzer.TARGETS)
def test_mutation_slice(target: str, seeds: dict[str, list[bytes]], fresh_runner: fuzzer.Runner) -> None:
    """SLICE_MUTATIONS mutated seed files (or hostile API calls) per target, seeded."""
    rng = random.Random(f"mnemo-fuzz-{target}")
    hangs = 0
    for _ in range(SLICE_SIZES.get(target, SLICE_MUTATIONS)):
        if target == "api":
            data = fuzzer.random_api_call(rng)
        elif target in fuzzer.GENERATED:
            data = fuzzer.GENERATED[target](rng)
        else:
            data = rng.choice(seeds[target])
            for _ in range(rng.choice([1, 1, 2, 3])):
                data = fuzzer.mutate(rng, target, data, seeds[target])
        hangs += fresh_runner.run(target, data).kind == "hang"
        if hangs >= SLICE_MAX_HANGS:
            break
    assert not fresh_runner.findings, f"{len(fresh_runner.findings)} distinct findings:\n{report(fresh_runner)}"


@pytest.mark.parametrize("target", fuzzer.TARGETS)
def test_hypothesis_slice(target: str, seeds: dict[str, list[bytes]], fresh_runner: fuzzer.Runner) -> None:
    """SLICE_HYPOTHESIS structure-level hypothesis examples per target (derandomized)."""
    examples = SLICE_HYPOTHESIS * SLICE_SIZES.get(target, SLICE_MUTATIONS) // SLICE_MUTATIONS
    fuzzer.run_hypothesis(fresh_runner, seeds, target, max(examples, 4), derandomize=True)
    assert not fresh_runner.findings, f"{len(fresh_runner.findings)} distinct findings:\n{report(fresh_runner)}"


# ---- fixed regression cases ----------------------------------------------------------------------
#
# Each defect of issue 13 that is an input, and each new one the fuzzer found, as one case: it must
# pass the oracle within fuzzer.CASE_TIMEOUT seconds.  Reproducer folders in regressions/ (copies
# of fuzz-findings/ folders) are cases too.


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line]


def tiktoken_with(seeds: dict[str, list[bytes]], *extra: bytes) -> bytes:
    return b"\n".join(_lines(seeds["tiktoken"][0]) + list(extra)) + b"\n"


def tiktoken_top(seeds: dict[str, list[bytes]]) -> int:
    return max(int(line.split(b" ")[1]) for line in _lines(seeds["tiktoken"][0]))


def tiktoken_rank_10_11(seeds: dict[str, list[bytes]]) -> bytes:
    """issue 13, 4: a rank of 100000000000 made the loader build set(range(top + 1))."""
    return tiktoken_with(seeds, base64.b64encode(b"\x01\x02\x03") + b" 100000000000")


def tiktoken_rank_superscript(seeds: dict[str, list[bytes]]) -> bytes:
    """issue 13, 6: a rank '²' passes str.isdigit but not int()."""
    return tiktoken_with(seeds, base64.b64encode(b"\x01\x02\x03") + " ²".encode())


def tiktoken_long_token(seeds: dict[str, list[bytes]]) -> bytes:
    """issue 13, 4: _split_by_ranks is quadratic in the token's length: one 8,000-byte token (whose
    bytes merge pair by pair) took 5.5 s.  16,000 bytes here (about 20 s before the fix), so that
    the case fails clearly, not by a hair, against the 5 s bound."""
    top = tiktoken_top(seeds)
    return tiktoken_with(seeds, base64.b64encode(b"\x01\x01") + f" {top + 1}".encode(),
                         base64.b64encode(b"\x01" * 16000) + f" {top + 2}".encode())


def bin_many_specials(seeds: dict[str, list[bytes]]) -> bytes:
    """issue 13, 4: repeated specials were checked with `in` on a list: 65,280 specials, 44.7 s."""
    names = [f"<|s{i}|>" for i in range(65280)]
    return vocabfile.encode_tokenizer_bin([], "mnemonic", names, "id", None)


def hf_json(seeds: dict[str, list[bytes]]) -> dict[str, object]:
    value: dict[str, object] = json.loads(seeds["hf"][0])
    return value


def hf_many_added_tokens(seeds: dict[str, list[bytes]]) -> bytes:
    """issue 13, 4: interop.assemble checked repeated added_tokens with `in` on a list: 40,000
    of them took 15.6 s."""
    value = hf_json(seeds)
    added = value["added_tokens"]
    assert isinstance(added, list)
    model = value["model"]
    assert isinstance(model, dict)
    base = len(model["vocab"])
    value["added_tokens"] = [{"id": base + i, "content": f"<|t{i}|>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True} for i in range(40000)]
    return json.dumps(value).encode()


def hf_added_tokens_int(seeds: dict[str, list[bytes]]) -> bytes:
    """issue 13, 6: "added_tokens": 5 raised TypeError."""
    value = hf_json(seeds)
    value["added_tokens"] = 5
    return json.dumps(value).encode()


DEEP_JSON = b"[" * 100000

Case = tuple[str, Callable[[dict[str, list[bytes]]], bytes]]

REGRESSIONS: dict[str, Case] = {
    # issue 13, 1: the shim's bounds check `aoff + n > len` overflowed: a segfault on both backends
    "memeq-offset-2**63-1": ("api", lambda s: fuzzer.api_payload("memeq", [b"abcdefgh", 2**63 - 1, b"abcdefgh", 0, 1])),
    "memeq-n-2**63-1": ("api", lambda s: fuzzer.api_payload("memeq", [b"abcdefgh", 1, b"abcdefgh", 1, 2**63 - 1])),
    "tiktoken-rank-10**11": ("tiktoken", tiktoken_rank_10_11),
    "tiktoken-rank-superscript-two": ("tiktoken", tiktoken_rank_superscript),
    "tiktoken-16000-byte-token": ("tiktoken", tiktoken_long_token),
    "tokenizer-bin-65280-specials": ("tokenizer_bin", bin_many_specials),
    "hf-40000-added-tokens": ("hf", hf_many_added_tokens),
    "hf-added-tokens-5": ("hf", hf_added_tokens_int),
    # issue 13, 6: '[' * 100000 raised RecursionError from json
    "hf-deep-nesting": ("hf", lambda s: DEEP_JSON),
    "gpt2-vocab-deep-nesting": ("gpt2", lambda s: fuzzer.pack_parts([DEEP_JSON, fuzzer.unpack_parts(s["gpt2"][0])[1]])),
    # issue 13, 6: tracebacks instead of errors from the API
    "token_bytes-float": ("api", lambda s: fuzzer.api_payload("token_bytes", [1.5])),
    "encode-None": ("api", lambda s: fuzzer.api_payload("encode", [None])),
    "encode-bytes": ("api", lambda s: fuzzer.api_payload("encode", [b"x"])),
    "encode_documents-bos-float": ("api", lambda s: fuzzer.api_payload("encode_documents", [[b"x"]], {"bos": 1.5})),
    "train-vocab_size-float": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 1500.0, "workers": 1})),
    "train-special-lone-surrogate": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "special_tokens": ["\ud800"], "workers": 1})),
    # found by this fuzzer (not in issue 13): more API arguments of the wrong type
    "encode-int": ("api", lambda s: fuzzer.api_payload("encode", [5])),
    "encode-allowed_special-bool": ("api", lambda s: fuzzer.api_payload("encode", ["hi"], {"allowed_special": True})),
    "encode_ordinary-None": ("api", lambda s: fuzzer.api_payload("encode_ordinary", [None])),
    "encode_batch-texts-int": ("api", lambda s: fuzzer.api_payload("encode_batch", [5], {"workers": 1})),
    "encode_batch-texts-of-None": ("api", lambda s: fuzzer.api_payload("encode_batch", [[None]], {"workers": 1})),
    "encode_batch-workers-str": ("api", lambda s: fuzzer.api_payload("encode_batch", [["hi"]], {"workers": "2"})),
    "encode-disallowed_special-int": ("api", lambda s: fuzzer.api_payload("encode", ["hi"], {"disallowed_special": 5})),
    # found by the fuzz slice after the merge of the api and robust branches: numpy arrays compared with "all"
    "encode-allowed_special-array": ("api", lambda s: fuzzer.api_payload("encode", ["<|bos|>"], {"allowed_special": {"$i64": 4}})),
    "encode-disallowed_special-array": ("api", lambda s: fuzzer.api_payload(
        "encode", ["a\x00b"], {"disallowed_special": {"$u16": b"\x01\x00\x02\x00"}})),
    "encode_documents-bos-list": ("api", lambda s: fuzzer.api_payload("encode_documents", [[b"x"]], {"bos": []})),
    "encode_documents-docs-int": ("api", lambda s: fuzzer.api_payload("encode_documents", [5])),
    "encode_documents-docs-str": ("api", lambda s: fuzzer.api_payload("encode_documents", [["text"]])),
    "decode_bytes-int": ("api", lambda s: fuzzer.api_payload("decode_bytes", [5])),
    "token_bytes-list": ("api", lambda s: fuzzer.api_payload("token_bytes", [[1]])),
    "train-vocab_size-list": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": [1], "workers": 1})),
    "train-workers-float": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "workers": 1.5})),
    "train-workers-2**63": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "workers": 2**63})),
    "train-pattern-float": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "pattern": 1.5, "workers": 1})),
    "train-special_tokens-bool": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "special_tokens": False, "workers": 1})),
    "train-special_tokens-bytes": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "special_tokens": [b"x"], "workers": 1})),
    "train-max_chunk_bytes-bytes": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "max_chunk_bytes": b"x", "workers": 1})),
    "train-verify-2**63": ("api", lambda s: fuzzer.api_payload(
        "train_from_iterator", [{"$iter": ["hello world"] * 3}], {"vocab_size": 300, "verify": 2**63, "workers": 1})),
    "train-inputs-int": ("api", lambda s: fuzzer.api_payload("train", [256], {"vocab_size": 300, "workers": 1})),
    "encode-disallowed_special-list-of-int": ("api", lambda s: fuzzer.api_payload(
        "encode", ["hi"], {"disallowed_special": [1, 2]})),
    "encode-disallowed_special-lone-surrogate": ("api", lambda s: fuzzer.api_payload(
        "encode", ["hi"], {"disallowed_special": ["\ud800"]})),
    "hf-added-tokens-float": ("hf", lambda s: json.dumps({**hf_json(s), "added_tokens": 1.5}).encode()),
    # found by the pickle target (issue 28's fuzz surfaces): an alias naming a dict in a pickled
    # Tokenizer's state was a TypeError (unhashable type) from Vocabulary._add_aliases
    "pickle-state-alias-target-dict": ("pickle", lambda s: fuzzer.pack_parts(
        [b"", s["tokenizer_bin"][0], repr(("n", {"<|a|>": {"x": 1}})).encode()])),
}


def regression_cases() -> Iterator[Any]:
    for name in REGRESSIONS:
        yield pytest.param(name, id=name)
    folder = Path(__file__).resolve().parent / "regressions"
    for case in sorted(folder.iterdir()) if folder.is_dir() else []:
        if (case / "target").is_file():
            yield pytest.param(case, id=case.name)


@pytest.mark.parametrize("case", list(regression_cases()))
def test_regression(case: str | Path, seeds: dict[str, list[bytes]], runner: fuzzer.Runner) -> None:
    if isinstance(case, Path):
        target, data = fuzzer.read_reproducer(case)
        what = (case / "description.txt").read_text().strip()
    else:
        target, build = REGRESSIONS[case]
        data = build(seeds)
        what = case
    outcome = runner.run(target, data)
    assert outcome.passed, f"{what}: {outcome.kind} after {outcome.seconds:.1f} s: {outcome.detail[:800]}"
