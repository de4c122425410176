"""tiktoken's vocabularies: mergeable ranks, `.tiktoken` rank files (gzip-compressed or not),
OpenAI's encodings by name, and a ready `tiktoken.Encoding` (docs/interop.md, docs/tiktoken.md).

Plain Python (not compiled): parsing and checking whole files once.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import importlib
import io
import os
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from mnemo.constants import MAX_TOKEN_ID
from mnemo.errors import ConfigError, FormatError
from mnemo.fileio import read_file, write_atomic
from mnemo.checks import check_pattern
from mnemo.formats.common import (
    MAX_TEXT_FILE_BYTES,
    PathLike,
    is_sentencepiece,
    refuse_superword,
    sentencepiece_error,
    tokenizer_of,
)
from mnemo.patterns import PRESETS, SplitPattern, compile_pattern, looks_like_a_name, refusing, regex_of
from mnemo.ranks import RankVocab, merges_of_ranks, parse_rank_lines
from mnemo.tokenizer import Tokenizer
from mnemo.vocab import TokenizerFields, check_size, check_special_tokens, from_ranks, ranked_pairs, split_by_ranks


def _regular_ids(tok: Tokenizer) -> list[int]:
    specials = set(tok.special_tokens.values())
    return [i for i in tok.vocab if i not in specials]  # tok.vocab: no holes


def mergeable_ranks(tok: Tokenizer) -> dict[bytes, int]:
    """tiktoken's `mergeable_ranks`: the bytes of every non-special token -> its id."""
    refuse_superword(tok, "tiktoken's mergeable ranks")
    ranks: dict[bytes, int] = {}
    for i in _regular_ids(tok):
        raw = tok.token_bytes(i)
        if raw in ranks:
            raise ConfigError(f"ids {ranks[raw]} and {i} are both {raw!r}: tiktoken ranks cannot hold both")
        ranks[raw] = i
    return ranks


def tiktoken_args(tok: Tokenizer, name: str | None = None) -> dict[str, Any]:
    """Keyword arguments of `tiktoken.Encoding(**...)`: name (default: the tokenizer's), pat_str,
    mergeable_ranks, special_tokens."""
    return {
        "name": tok.name if name is None else name,
        "pat_str": regex_of(tok.split_pattern, "a tiktoken Encoding"),
        "mergeable_ranks": mergeable_ranks(tok),
        "special_tokens": dict(tok.special_tokens),
    }


def to_tiktoken(tok: Tokenizer, name: str | None = None) -> Any:
    """A ready `tiktoken.Encoding` that encodes as `tok` does (needs tiktoken installed).

    Typed Any and imported by name: tiktoken is optional, and the build type-checks without it.
    """
    try:
        tiktoken = importlib.import_module("tiktoken")
    except ImportError:
        raise ConfigError("to_tiktoken needs the tiktoken package: pip install tiktoken") from None
    return tiktoken.Encoding(**tiktoken_args(tok, name))


def save_tiktoken(tok: Tokenizer, path: PathLike) -> None:
    """A `.tiktoken` file: one `base64(token) rank` line per token, by rank (no specials, no pattern)."""
    ranks = sorted(mergeable_ranks(tok).items(), key=lambda item: item[1])
    text = "".join(f"{base64.b64encode(raw).decode('ascii')} {rank}\n" for raw, rank in ranks)
    write_atomic(path, text.encode("ascii"))


#: The longest rank a .tiktoken line may hold (ranks are ids: far below 10**18).
MAX_RANK_DIGITS: Final = 18


def parse_tiktoken(text: str, source: str) -> tuple[dict[bytes, int], dict[bytes, int]]:
    """A `.tiktoken` file's ranks, and the line of each token.  The ranks may leave gaps, as
    tiktoken allows (p50k_base's file has no rank 50256, the id of its <|endoftext|>): a gap is
    a hole of the id space; a token or a rank listed twice is an error (tiktoken keeps the
    last of a repeated token, and stops on a repeated rank)."""
    ranks: dict[bytes, int] = {}
    where: dict[bytes, int] = {}
    rank_line: dict[int, int] = {}
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise FormatError(f"{source}: line {n}: {line[:60]!r} should be 'BASE64 RANK'")
        try:
            raw = base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{source}: line {n}: {parts[0][:60]!r} is not valid base64") from None
        # ASCII digits only: str.isdigit() takes "²", which int() refuses; and a bounded length,
        # so a rank of a million digits is not converted (nor a huge range built from it later).
        if not (parts[1].isascii() and parts[1].isdigit()) or len(parts[1]) > MAX_RANK_DIGITS:
            raise FormatError(
                f"{source}: line {n}: rank {parts[1][:20]!r} is not a non-negative integer of at most "
                f"{MAX_RANK_DIGITS} digits"
            )
        rank = int(parts[1])
        if not raw:
            raise FormatError(f"{source}: line {n}: the token is empty")
        if raw in ranks:
            raise FormatError(f"{source}: line {n}: token {raw!r} is listed again (first on line {where[raw]})")
        if rank in rank_line:
            raise FormatError(f"{source}: line {n}: rank {rank} is given again (first on line {rank_line[rank]})")
        ranks[raw] = rank
        where[raw] = n
        rank_line[rank] = n
    if not ranks:
        raise FormatError(f"{source}: no ranks in the file")
    return ranks, where


def _split_by_ranks(raw: bytes, ranks: Mapping[bytes, int], limit: int) -> list[bytes]:
    """tiktoken's byte-pair merge of `raw` using only ranks below `limit`: repeatedly merge the
    adjacent pair of lowest rank, the leftmost of equals (vocab.split_by_ranks)."""
    return split_by_ranks(raw, ranks, limit)[0]


def merges_from_ranks(ranks: Mapping[bytes, int], source: str, where: Callable[[bytes], str]) -> list[tuple[bytes, bytes]]:
    """The merges behind mergeable ranks, by rank: each token's pair, the two parts tiktoken's
    rule glues into it (vocab.ranked_pairs; a part may rank after the token).  Tokens that no
    pair makes are left out: they are produced only whole, and from_mergeable_ranks keeps them
    (`source` and `where` are kept for callers; nothing here is refused any more)."""
    pairs = ranked_pairs(ranks)
    return [pair for raw in sorted(pairs, key=ranks.__getitem__) if (pair := pairs[raw]) is not None]


def split_aliases(special_tokens: Mapping[str, int] | None) -> tuple[dict[str, int], dict[str, str]]:
    """Special tokens as tiktoken takes them (names may share an id: o200k_harmony calls 200018
    both `<|endofprompt|>` and `<|reserved_200018|>`) -> (the first name of each id, in the given
    order; the others, each naming the first name of its id)."""
    first: dict[int, str] = {}
    primary: dict[str, int] = {}
    aliases: dict[str, str] = {}
    for name, i in (special_tokens or {}).items():
        owner = first.setdefault(i, name) if isinstance(i, int) else name
        if owner == name:
            primary[name] = i
        else:
            aliases[name] = owner
    return primary, aliases


def from_mergeable_ranks(
    ranks: Mapping[bytes, int],
    pattern: str | SplitPattern,
    special_tokens: Mapping[str, int] | None = None,
    source: str = "<mergeable_ranks>",
    where: Callable[[bytes], str] | None = None,
    unicode: str | None = None,
    *,
    name: str | None = None,
    unmatched: str = "refuse",
) -> Tokenizer:
    """A Tokenizer from tiktoken's mergeable ranks (rank = id), a pattern (a preset name or a
    split regex) and specials, that encodes as tiktoken does (vocab.from_ranks: a ranked
    vocabulary when the ranks need one, docs/formats.md "Rank semantics").  `unicode`: the Unicode
    version the pattern's classes follow ("tiktoken": tiktoken's, for its ids on every code
    point); None: a preset's default, and tiktoken's tables for a split regex
    (docs/pretokenizer.md, 'Unicode versions').  Ranks
    0..n-1 take the compiled path, mnemo/ranks.py, ordinary or ranked.  Two special-token names
    may share an id, as in tiktoken (split_aliases); named `name` when given.

    `unmatched`: what becomes of text a split regex of one's own does not match.  tiktoken drops
    it; mnemo does not drop text, so by default ("refuse") encoding such text is an InputError
    that names it; "keep" keeps it as pieces of their own, as Hugging Face's Split does (ids then
    differ from tiktoken's there).  The presets match every character (docs/pretokenizer.md,
    "Text the pattern does not match")."""
    split_pattern = compile_pattern(
        pattern if isinstance(pattern, SplitPattern) else check_pattern(pattern), unicode, default="tiktoken"
    )
    split_pattern = _unmatched_rule(split_pattern, unmatched)
    primary, aliases = split_aliases(special_tokens)
    by_rank = _tokens_by_rank(ranks)
    tok = None if by_rank is None else _from_tokens_by_rank(by_rank, split_pattern, primary)
    if tok is None:
        tok = tokenizer_of(source, from_ranks(source, ranks, pattern=split_pattern, specials=primary, where=where))
    return _named(tok, aliases, name, source)


def _unmatched_rule(sp: SplitPattern, unmatched: str) -> SplitPattern:
    """The pattern with from_mergeable_ranks' rule for text its regex does not match."""
    if unmatched == "refuse":
        return refusing(sp)
    if unmatched != "keep":
        raise ConfigError(f"unmatched={unmatched!r}: use 'refuse' (the default) or 'keep'")
    return sp


def _named(tok: Tokenizer, aliases: Mapping[str, str], name: str | None, source: str) -> Tokenizer:
    """A tokenizer its loader has just built, with tiktoken's second names of special tokens
    (split_aliases) and its encoding's name."""
    try:
        tok._add_aliases(aliases)
    except ConfigError as exc:
        raise FormatError(f"{source}: {exc}") from None
    if name is not None:
        tok._set_name(name)
    return tok


def _tokens_by_rank(ranks: Mapping[bytes, int]) -> tuple[list[bytes], int] | None:
    """The tokens ordered by rank and the lowest rank, when the ranks are exactly offset..offset
    + n - 1 (0..n-1 in a rank file; a tekken file's start after its special ids), else None."""
    if not ranks:
        return None
    offset = min(ranks.values(), key=lambda r: r if type(r) is int else -1)
    if type(offset) is not int or offset < 0:
        return None
    tokens: list[bytes | None] = [None] * len(ranks)
    for raw, rank in ranks.items():
        if not isinstance(raw, bytes) or type(rank) is not int:
            return None
        at = rank - offset
        if not 0 <= at < len(tokens) or tokens[at] is not None:
            return None
        tokens[at] = raw
    return cast("list[bytes]", tokens), offset


def _from_tokens_by_rank(
    by_rank: tuple[list[bytes], int], pattern: SplitPattern, special_tokens: Mapping[str, int] | None
) -> Tokenizer | None:
    """The compiled path (mnemo/ranks.py): the Tokenizer the Python path (vocab.from_ranks)
    builds from the same ranks -- ordinary or ranked -- or None when the Python path is to word
    an error (fields_of_ranks)."""
    fields = fields_of_ranks(by_rank, pattern, special_tokens)
    return None if fields is None else Tokenizer._from_checked(fields)


def fields_of_ranks(
    by_rank: tuple[list[bytes], int],
    pattern: SplitPattern,
    special_tokens: Mapping[str, int] | None,
    vocab: RankVocab | None = None,
) -> TokenizerFields | None:
    """The fields of _from_tokens_by_rank's Tokenizer, every rule checked, or None.  `by_rank`:
    _tokens_by_rank's tokens and lowest rank, the public id of the token of place r being
    offset + r.  Specials take the ids given, outside the ranks' ids.  `vocab`: merges_of_ranks'
    answer for the tokens when the caller has it already (tokenizer_json.converted_vocab)."""
    tokens, offset = by_rank
    if vocab is None:
        vocab = merges_of_ranks(tokens)
    if vocab is None:
        return None
    specials = sorted((special_tokens or {}).items(), key=lambda item: item[1] if type(item[1]) is int else -1)
    names = [name for name, _ in specials]
    ids = [i for _, i in specials]
    if (
        not all(isinstance(name, str) for name in names)
        or not all(type(i) is int and 0 <= i <= MAX_TOKEN_ID and not offset <= i < offset + len(tokens) for i in ids)
        or len(set(ids)) != len(ids)
        or offset + len(tokens) - 1 > MAX_TOKEN_ID
    ):
        return None
    try:
        check_size(len(vocab.merges) + len(vocab.whole), len(names), ConfigError)
        check_special_tokens(names)
    except ConfigError:
        return None
    public = [offset + r for r in vocab.public] + ids if offset else vocab.public + ids
    return TokenizerFields(
        vocab.merges, pattern, names, "id", None, public, vocab.whole, vocab.ranked, encoder_tables=vocab.tables,
        spelled=vocab.spelled,
    )


EOT: Final = "<|endoftext|>"
ENDOFPROMPT: Final = "<|endofprompt|>"
FIM: Final = ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
R50K_SHA256: Final = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
P50K_SHA256: Final = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"
O200K_SHA256: Final = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

#: gpt-oss's special tokens: o200k_base's, then these names, then <|reserved_N|> for every other
#: id up to 201087 -- 200018 among them, which keeps its first name <|endofprompt|> as well.
HARMONY_NAMED: Final = {
    "<|startoftext|>": 199998, "<|return|>": 200002, "<|constrain|>": 200003, "<|channel|>": 200005,
    "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008, "<|call|>": 200012,
}  # fmt: skip


def _harmony_specials() -> dict[str, int]:
    specials = {EOT: 199999, ENDOFPROMPT: 200018, **HARMONY_NAMED}
    taken = set(HARMONY_NAMED.values()) | {199999}
    for i in range(200000, 201088):
        if i not in taken:
            specials[f"<|reserved_{i}|>"] = i
    return specials


#: OpenAI's encodings as tiktoken 0.14 defines them (tiktoken_ext/openai_public.py): the mnemo
#: pattern that splits as theirs does, the SHA-256 tiktoken checks (of the decompressed file), and
#: the special tokens (names may share an id: split_aliases).  ../shared/fixtures/tiktoken/README.md
#: lists cl100k_base's and o200k_base's; p50k_edit reads p50k_base's file and o200k_harmony
#: o200k_base's.  r50k_base's and p50k_base's files are GPT-2's vocabulary (formats/openai.py
#: derives them, and checks these digests).  tiktoken's `gpt2` is r50k_base under another name
#: (formats/openai.py): not a preset here, where "gpt2" is the pattern's name.
TIKTOKEN_PRESETS: Final[dict[str, tuple[str, str, dict[str, int]]]] = {
    "cl100k_base": (
        "cl100k",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": ("o200k", O200K_SHA256, {EOT: 199999, ENDOFPROMPT: 200018}),
    "r50k_base": ("gpt2", R50K_SHA256, {EOT: 50256}),
    "p50k_base": ("gpt2", P50K_SHA256, {EOT: 50256}),
    "p50k_edit": ("gpt2", P50K_SHA256, {EOT: 50256, FIM[0]: 50281, FIM[1]: 50282, FIM[2]: 50283}),
    "o200k_harmony": ("o200k", O200K_SHA256, _harmony_specials()),
}

GZIP_MAGIC: Final = b"\x1f\x8b"


def read_tiktoken_bytes(path: PathLike) -> tuple[bytes, str]:
    """A .tiktoken file's bytes, decompressed when it is gzip (known by its first two bytes, as
    the files are shipped: cl100k_base.tiktoken.gz), and the name to give in messages.  Both the
    file and what it decompresses to are bounded by MAX_TEXT_FILE_BYTES: a gzip bomb costs that
    much and no more."""
    source = os.fspath(path)
    data = read_file(path, MAX_TEXT_FILE_BYTES, ".tiktoken file")
    if data[:2] != GZIP_MAGIC:
        return data, source
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_TEXT_FILE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(
            f"{source}: starts as a gzip file does (1f 8b) but does not decompress ({exc}): the file is damaged "
            "or cut short; download it again"
        ) from None
    if len(out) > MAX_TEXT_FILE_BYTES:
        raise FormatError(
            f"{source}: decompresses to more than {MAX_TEXT_FILE_BYTES:,} bytes, the most mnemo reads as a "
            ".tiktoken file: check that the path names one"
        )
    return out, f"{source} (decompressed)"


def load_tiktoken(
    path: PathLike,
    pattern: str,
    special_tokens: Mapping[str, int] | None = None,
    *,
    unicode: str | None = None,
    unmatched: str = "refuse",
) -> Tokenizer:
    """A Tokenizer from a `.tiktoken` rank file (gzip-compressed or not).

    `pattern` is a split pattern -- a preset name ("llama3", "cl100k", ...) or a split regex --
    with the special tokens' ids in `special_tokens`; or the name of one of OpenAI's encodings
    (TIKTOKEN_PRESETS: cl100k_base, o200k_base, r50k_base, p50k_base, p50k_edit, o200k_harmony),
    which sets the pattern, the special tokens and the name as tiktoken's encoding of that name
    has them, and checks the file's SHA-256 as tiktoken does: load_tiktoken("o200k_base.tiktoken",
    "o200k_base") encodes as tiktoken.get_encoding("o200k_base"), on every code point: an
    encoding by name takes the Unicode tables tiktoken's regex engine holds ("tiktoken"), and
    tokenizer.bin records them.  `unicode`: the tables the pattern's classes follow (a version,
    "tiktoken" or "tokenizers"); None: "tiktoken" for an encoding by name and for a split regex
    (the file's reference engine), a preset's own default otherwise (docs/pretokenizer.md,
    'Unicode versions').  `unmatched`: text a
    split regex of one's own does not match, as from_mergeable_ranks says.
    """
    preset = TIKTOKEN_PRESETS.get(pattern)
    if preset is None:
        if isinstance(pattern, str) and pattern not in PRESETS and looks_like_a_name(pattern):
            raise ConfigError(
                f"unknown pattern or preset {pattern!r}: give a split pattern (a preset: {', '.join(PRESETS)}; or a "
                f"split regex) with the special tokens, or one of OpenAI's encodings ({', '.join(TIKTOKEN_PRESETS)})"
            )
        _unmatched_rule(compile_pattern(check_pattern(pattern), unicode, default="tiktoken"), unmatched)  # before reading
    elif special_tokens is not None:
        raise ConfigError(
            f"the preset {pattern!r} sets the special tokens; to choose others, give its pattern instead: "
            f"load_tiktoken(path, {preset[0]!r}, special_tokens={{...}})"
        )
    data, source = read_tiktoken_bytes(path)
    name = None
    if preset is not None:
        name = pattern
        unicode = "tiktoken" if unicode is None else unicode  # its ids on every code point
        pattern, expected, special_tokens = preset
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise FormatError(
                f"{source}: SHA-256 {digest}, not {expected}: this is not OpenAI's {name}.tiktoken, which the "
                f"preset {name!r} stands for (tiktoken refuses it too); to load it anyway, give its pattern and "
                f"special tokens: load_tiktoken(path, {pattern!r}, special_tokens={{...}})"
            )
    if is_sentencepiece(data):  # Llama 2's and Mistral's tokenizer.model are; Llama 3's is tiktoken's
        raise sentencepiece_error(source, "a .tiktoken rank file")
    by_rank = parse_rank_lines(data)  # compiled; None: the Python parser below words what is wrong
    split_pattern = _unmatched_rule(compile_pattern(pattern, unicode, default="tiktoken"), unmatched)
    primary, aliases = split_aliases(special_tokens)
    fast = None if by_rank is None else _from_tokens_by_rank((by_rank, 0), split_pattern, primary)
    if fast is not None:
        return _named(fast, aliases, name, source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{source}: offset {exc.start}: not valid UTF-8") from None
    ranks, lines = parse_tiktoken(text, source)
    return from_mergeable_ranks(
        ranks, split_pattern, special_tokens, source, lambda raw: f"line {lines[raw]}", name=name, unmatched=unmatched
    )
