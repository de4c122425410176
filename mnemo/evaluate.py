"""`mnemo eval`: tokenizers side by side on corpora.

Per tokenizer and corpus: bytes per token and tokens per byte (the measure that compares
tokenizers of any kind, superword ones included), the share of the text's tokens that are
superwords (tokens spanning two or more chunks of the tokenizer's own pattern: 0 for plain BPE),
tokens per word (fertility: words are runs of non-space characters, `str.split()`), the share of
the vocabulary the corpus uses, and encode speed; per tokenizer, its 20 most frequent tokens over all corpora and the length distribution
of its tokens (bytes per token, over the vocabulary and over the encoded text).  Every
tokenizer is loaded into a mnemo Tokenizer, so every one is encoded by the same engine: the
speeds compare vocabularies, not libraries (bench/ compares libraries).

Tokenizers are named by a spec (docs/eval.md): anything mnemo.load reads -- a tokenizer.bin, a
tokenizer.json, a transformers or GPT-2 folder or `VOCAB.json,MERGES.txt`, or a `.tiktoken` rank
file (gzip allowed) whose name starts with a known preset (cl100k_base, o200k_base, r50k_base),
whose pattern and special tokens come from the preset (mnemo/formats/load.py).  `NAME=SPEC`
names the column.  A tokenizer this build cannot hold (a
ConfigError) is reported as skipped, with the reason, and the others are evaluated.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mnemo.defaults import DEFAULT_TEXT_FIELD
from mnemo.errors import ConfigError, InputError
from mnemo.fileio import write_atomic
from mnemo.location import Location, location
from mnemo.tokenizer import Tokenizer

if TYPE_CHECKING:
    from mnemo.formats.load import AnyTokenizer

#: Token lengths (bytes) 1..LENGTH_BINS-1 have their own bin; the last bin holds the longer.
LENGTH_BINS = 17
TOP = 20


def load_spec(spec: str, pattern: str | None = None) -> tuple[str, AnyTokenizer]:
    """(label, tokenizer) of one spec: `[NAME=]PATH` -- the resolver every TOKENIZER argument
    of the command line goes through (mnemo/formats/load.py).  `pattern` (eval --pattern): the
    split pattern of a .tiktoken file whose name names no OpenAI encoding; every other spec
    loads as it is, so one option serves a comparison of several kinds."""
    from mnemo.formats.load import resolve

    return resolve(spec, fallback_pattern=pattern)


def corpus_documents(path: str | Path, max_bytes: int = -1, text_field: str = DEFAULT_TEXT_FIELD) -> Iterator[bytes]:
    """The documents of a corpus file as UTF-8 bytes, up to about `max_bytes` (-1: all).

    JSON Lines records give their `text_field`, or, for chat records, their messages' contents
    joined by newlines; other files are read as every mnemo input is (mnemo/sources.py)."""
    from mnemo.sources import check_inputs, iter_documents, kind_of

    total = 0
    for p in check_inputs([path]):  # a datasets save_to_disk folder holds several files
        for doc in _file_documents(p, text_field) if kind_of(p) == "jsonl" else iter_documents([p], text_field=text_field):
            if 0 <= max_bytes <= total:
                return
            total += len(doc)
            yield doc


def _file_documents(p: Location, text_field: str) -> Iterator[bytes]:
    """A JSON Lines file's documents: `text_field`, or a chat record's messages joined."""
    from mnemo.sources import open_binary

    with open_binary(p) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise InputError(f"{p}:{line_no}: not a JSON record ({exc})") from None
            text = record.get(text_field) if isinstance(record, dict) else None
            if text is None and isinstance(record, dict) and isinstance(record.get("messages"), list):
                text = "\n".join(str(m.get("content", "")) for m in record["messages"] if isinstance(m, dict))
            if not isinstance(text, str):
                raise InputError(f"{p}:{line_no}: no {text_field!r} string and no chat 'messages'; pass --text-field")
            yield text.encode("utf-8", "surrogatepass")


@dataclass
class CorpusResult:
    n_bytes: int = 0
    n_tokens: int = 0
    n_words: int = 0
    seconds: float = 0.0
    used: int = 0  # distinct ids
    n_super: int = 0  # tokens of the encoded text that span two or more stage-1 chunks

    @property
    def bytes_per_token(self) -> float:
        return self.n_bytes / self.n_tokens if self.n_tokens else 0.0

    @property
    def tokens_per_byte(self) -> float:
        """Tokens / UTF-8 bytes: the measure papers compare tokenizers of different kinds with
        (SuperBPE reports it per byte of the same text); fewer is better."""
        return self.n_tokens / self.n_bytes if self.n_bytes else 0.0

    @property
    def super_share(self) -> float:
        """Share of the encoded text's tokens that are superwords (0 for plain BPE)."""
        return self.n_super / self.n_tokens if self.n_tokens else 0.0

    @property
    def tokens_per_word(self) -> float:
        """Fertility; NaN for text without words (whitespace only), which `mnemo eval` prints as -."""
        return self.n_tokens / self.n_words if self.n_words else math.nan

    @property
    def mb_per_s(self) -> float:
        return self.n_bytes / 1e6 / self.seconds if self.seconds else 0.0


@dataclass
class TokenizerResult:
    label: str
    n_vocab: int  # tokens of the vocabulary (holes of its id space not counted)
    corpora: dict[str, CorpusResult] = field(default_factory=dict)
    top: list[tuple[int, bytes, int]] = field(default_factory=list)  # (id, bytes, count)
    vocab_lengths: list[int] = field(default_factory=list)  # LENGTH_BINS bins over the vocabulary
    text_lengths: list[int] = field(default_factory=list)  # LENGTH_BINS bins over the encoded text


def _length_bins(lengths: np.ndarray, weights: np.ndarray | None = None) -> list[int]:
    clipped = np.minimum(lengths, LENGTH_BINS - 1)
    return [int(x) for x in np.bincount(clipped, weights=weights, minlength=LENGTH_BINS)[:LENGTH_BINS].round()]


def superword_ids(tok: AnyTokenizer) -> np.ndarray:
    """A bool per id: the token is a superword -- its characters hold two or more chunks of the
    tokenizer's own (stage-1) pattern, so plain BPE, whose merges never cross a chunk, has none.
    Special tokens and holes are not.  A tokenizer.json pipeline (HFTokenizer) is BPE inside its
    pre-tokens: none."""
    from mnemo.patterns import split

    spans = np.zeros(tok.n_vocab, dtype=bool)
    if not isinstance(tok, Tokenizer):
        return spans
    specials = set(tok.special_tokens.values())
    for i, raw in tok.vocab.items():
        if len(raw) < 2 or i in specials:
            continue
        # its whole characters: a token that ends inside a character ('分<0xE7>') is cut there
        # by the pattern when alone, though inside text it sits in one chunk
        whole = raw.decode("utf-8", "ignore").encode("utf-8")
        if len(split(whole, tok.split_pattern)) > 1:
            spans[i] = True
    return spans


def evaluate(tokenizers: Sequence[tuple[str, AnyTokenizer]], corpora: Sequence[tuple[str, list[bytes]]]) -> list[TokenizerResult]:
    """Every tokenizer on every corpus (documents as bytes, each encoded as plain text).  A corpus
    without a byte of text is an InputError: every figure of it would be 0 / 0."""
    for name, docs in corpora:
        if not any(docs):
            raise InputError(_no_text(repr(name), docs, "give documents with text"))
    words = {name: sum(len(d.decode("utf-8", "replace").split()) for d in docs) for name, docs in corpora}
    results: list[TokenizerResult] = []
    for label, tok in tokenizers:
        # ids index the arrays; an id space may have holes (cl100k_base's unused ids): no token, no length
        vocab = tok.vocab
        present = np.fromiter(vocab, dtype=np.int64, count=len(vocab))
        lengths = np.zeros(tok.n_vocab, dtype=np.int64)
        lengths[present] = [len(raw) for raw in vocab.values()]
        regular = np.zeros(tok.n_vocab, dtype=bool)
        regular[present] = True
        regular[list(tok.special_tokens.values())] = False
        res = TokenizerResult(label, tok.n_tokens, vocab_lengths=_length_bins(lengths[regular]))
        spans = superword_ids(tok)
        total = np.zeros(tok.n_vocab, dtype=np.int64)
        for name, docs in corpora:
            seen = np.zeros(tok.n_vocab, dtype=np.int64)
            r = CorpusResult(n_bytes=sum(map(len, docs)), n_words=words[name])
            t0 = time.perf_counter()
            encoded = [tok.encode_bytes(d) for d in docs]
            r.seconds = time.perf_counter() - t0
            for ids in encoded:
                if ids:
                    seen += np.bincount(np.asarray(ids, dtype=np.int64), minlength=tok.n_vocab)
            r.n_tokens = int(seen.sum())
            r.used = int(np.count_nonzero(seen))
            r.n_super = int(seen[spans].sum())
            res.corpora[name] = r
            total += seen
        order = np.argsort(-total, kind="stable")[:TOP]
        res.top = [(int(i), tok.token_bytes(int(i)), int(total[i])) for i in order if total[i] > 0]
        res.text_lengths = _length_bins(lengths, total.astype(np.float64))
        results.append(res)
    return results


def format_tables(results: Sequence[TokenizerResult], corpus_names: Sequence[str], skipped: Sequence[tuple[str, str]] = ()) -> str:
    """The comparison as plain-text tables (one per measure; tokenizers as rows)."""
    from mnemo.tokshow import token_text

    out: list[str] = []
    width = max([len("tokenizer"), *(len(r.label) for r in results)])

    def table(title: str, cell: Callable[[CorpusResult, TokenizerResult], str]) -> None:
        out.append(title)
        cols = [*corpus_names, "all"]
        cw = [max(len(c), 8) for c in cols]
        out.append(f"  {'tokenizer'.ljust(width)}  {'tokens':>7}  " + "  ".join(c.rjust(w) for c, w in zip(cols, cw)))
        for r in results:
            allr = CorpusResult(
                n_bytes=sum(c.n_bytes for c in r.corpora.values()),
                n_tokens=sum(c.n_tokens for c in r.corpora.values()),
                n_words=sum(c.n_words for c in r.corpora.values()),
                seconds=sum(c.seconds for c in r.corpora.values()),
                used=-1,
                n_super=sum(c.n_super for c in r.corpora.values()),
            )
            cells = [cell(r.corpora[c], r) for c in corpus_names] + [cell(allr, r)]
            out.append(f"  {r.label.ljust(width)}  {r.n_vocab:>7}  " + "  ".join(v.rjust(w) for v, w in zip(cells, cw)))
        out.append("")

    table("bytes per token (more is better: fewer tokens for the same text)", lambda c, r: f"{c.bytes_per_token:.2f}")
    table(
        "tokens per byte (fewer is better; the measure that compares tokenizers of any kind, superword ones included)",
        lambda c, r: f"{c.tokens_per_byte:.4f}",
    )
    table(
        "superword tokens: share of the encoded text (tokens spanning two or more stage-1 chunks; 0 for plain BPE)",
        lambda c, r: f"{100 * c.super_share:.1f}%",
    )
    table("tokens per word (fertility: words are runs of non-space characters)", lambda c, r: "-" if not c.n_words else f"{c.tokens_per_word:.2f}")
    table(
        "share of the vocabulary used",
        lambda c, r: "-" if c.used < 0 else f"{100 * c.used / r.n_vocab:.1f}%",
    )
    table("encode speed, MB/s (one process; same engine for all)", lambda c, r: f"{c.mb_per_s:.1f}")
    out.append(f"token length in bytes: share of the vocabulary / of the encoded text (last bin: {LENGTH_BINS - 1}+)")
    lw = width + 6
    out.append(f"  {'tokenizer'.ljust(lw)}  " + " ".join(f"{n:>4}" for n in range(1, LENGTH_BINS)) + "  mean")
    for r in results:
        for kind, bins in (("vocab", r.vocab_lengths), ("text", r.text_lengths)):
            n = sum(bins) or 1
            mean = sum(k * v for k, v in enumerate(bins)) / n
            row = " ".join(f"{100 * v / n:4.0f}" for v in bins[1:])
            out.append(f"  {(r.label + ' ' + kind).ljust(lw)}  {row}  {mean:4.1f}")
    out.append("")
    for r in results:
        out.append(f"{r.label}: the {len(r.top)} most frequent tokens (id:'bytes' count)")
        out.append("  " + "  ".join(f"{i}:'{token_text(raw)}' {n}" for i, raw, n in r.top))
    if skipped:
        out.append("")
        for spec, reason in skipped:
            where = spec.partition("=")[2] or spec
            out.append(f"skipped: {reason}" if where in reason else f"skipped {spec}: {reason}")
    return "\n".join(out).rstrip() + "\n"


def plot(results: Sequence[TokenizerResult], corpus_names: Sequence[str], path: str | Path) -> None:
    """Bytes per token per corpus for each tokenizer, and the token-length histograms, as a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "--plot needs matplotlib, which is not installed: pip install 'mnemo[plot]' (or pip install matplotlib)"
        ) from None
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    n = len(results)
    x = np.arange(len(corpus_names))
    w = 0.8 / max(n, 1)
    for k, r in enumerate(results):
        values = [r.corpora[c].bytes_per_token for c in corpus_names]
        bars = left.bar(x + (k - (n - 1) / 2) * w, values, w, label=r.label)
        left.bar_label(bars, fmt="%.2f", fontsize=7)
    left.set_xticks(x, list(corpus_names))
    left.set_ylabel("bytes per token (higher: fewer tokens)")
    left.set_title("compression per corpus")
    top = max((r.corpora[c].bytes_per_token for r in results for c in corpus_names), default=1.0)
    left.set_ylim(0, top * 1.2)  # room for the legend above the bars
    left.legend(fontsize=8, loc="upper left", ncol=min(n, 4))
    lengths = np.arange(1, LENGTH_BINS)
    for r in results:
        total = sum(r.text_lengths) or 1
        right.step(lengths, [100 * v / total for v in r.text_lengths[1:]], where="mid", label=r.label)
    right.set_xticks(lengths, [str(k) for k in lengths[:-1]] + [f"{LENGTH_BINS - 1}+"])
    right.set_xlabel("token length (bytes)")
    right.set_ylabel("% of tokens in the encoded corpora")
    right.set_title("token-length distribution (all corpora)")
    right.legend(fontsize=8)
    fig.tight_layout()
    image = io.BytesIO()
    try:
        fig.savefig(image, format="png", dpi=110)
    finally:
        plt.close(fig)
    write_atomic(path, image.getvalue())  # never a half-written picture


def run(
    specs: Sequence[str], corpus_paths: Sequence[str], max_bytes: int, text_field: str = DEFAULT_TEXT_FIELD,
    pattern: str | None = None,
) -> tuple[list[TokenizerResult], list[str], list[tuple[str, str]]]:
    """Load the tokenizers (one this build cannot hold -- a ConfigError -- is skipped with its reason;
    a missing or damaged file is an error), read the corpora, evaluate.  `pattern`: load_spec's."""
    tokenizers: list[tuple[str, AnyTokenizer]] = []
    skipped: list[tuple[str, str]] = []
    for spec in specs:
        try:
            tokenizers.append(load_spec(spec, pattern))
        except ConfigError as exc:  # loads, but not in this build (a pattern or size it lacks)
            skipped.append((spec, str(exc)))
    if not tokenizers:
        raise ConfigError("no tokenizer loaded: " + "; ".join(f"{s}: {why}" for s, why in skipped))
    labels = [label for label, _ in tokenizers]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"two tokenizers are both called {next(x for x in labels if labels.count(x) > 1)!r}; name them NAME=PATH")
    if max_bytes == 0:
        raise ConfigError("max_bytes 0 reads no text to measure: give a positive number of bytes, or -1 for all of each corpus")
    corpora: list[tuple[str, list[bytes]]] = []
    for cp in corpus_paths:
        name = Path(cp).name.split(".")[0]
        docs = list(corpus_documents(cp, max_bytes, text_field))
        if not any(docs):
            raise InputError(_no_text(str(cp), docs, f"give a corpus with text, or name the field that holds it (--text-field, now {text_field!r})"))
        corpora.append((name, docs))
    return evaluate(tokenizers, corpora), [n for n, _ in corpora], skipped


def _no_text(what: str, docs: Sequence[bytes], todo: str) -> str:
    return f"{what}: no text to measure ({len(docs):,} documents, 0 bytes): every figure would be 0 / 0; {todo}"
