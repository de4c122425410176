"""`mnemo inspect`: tokens a model will see rarely or never (the "SolidGoldMagikarp" problem).

Three lists, each with ids, bytes (as `tokshow` shows them) and counts:

* unreachable: a token whose own bytes do not encode to it (encode_bytes(bytes) != [id]), so
  decoding it and encoding the text again never gives it back.  Found by encoding every token.
  Marked "partial" when its bytes are not valid UTF-8 (it ends inside a character): alone, the
  pre-tokenizer cuts the incomplete character off, but inside text that completes the
  character it can still be produced.
* intermediate: a token that every later merge using it consumed during training: its count
  after training is 0 although it was merged.  From the merge counts of tokenizer.bin alone:
  merge k's count is the number of times its pair was replaced (at most; overlapping (x, x)
  pairs are counted each), and a later merge with the token as one part took at least its own
  count of them; when what was made is no more than what was taken, none is left.
* under-trained (with a held-out corpus): a token the corpus never produces, or produces far
  below what its training count predicts.  The prediction scales each token's count left
  after training (the bound above) by the ratio of the corpus's token total to training's.

docs/inspect.md has the choices and an example listing.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mnemo.tokenizer import Tokenizer
from mnemo.tokshow import token_text

#: "Far below": the held-out corpus produces the token fewer than 1/FAR_BELOW times as often as
#: its training count predicts...
FAR_BELOW = 10
#: ...and the prediction is at least this many (a prediction of 3 that came out 0 says nothing).
MIN_EXPECTED = 20.0


@dataclass
class Finding:
    """One token of a list: its id and bytes and the counts that put it there."""

    id: int
    raw: bytes
    merge_count: int | None = None  # its merge's count in training (tokenizer.bin)
    left: int | None = None  # bound on its count left after training (intermediate: 0)
    seen: int | None = None  # times the held-out corpus produced it
    expected: float | None = None  # times the training counts predict for the held-out corpus
    encodes_to: list[int] = field(default_factory=list)  # unreachable: what its bytes encode to
    partial: bool = False  # unreachable: its bytes are not valid UTF-8 (part of a character)
    used_by: list[int] = field(default_factory=list)  # intermediate: the merges that consumed it


@dataclass
class Report:
    n_vocab: int
    unreachable: list[Finding]
    intermediate: list[Finding] | None  # None: no merge counts in the file
    never: list[Finding] | None  # None: no corpus given
    far_below: list[Finding] | None
    corpus_tokens: int = 0


def unreachable_tokens(tok: Tokenizer) -> list[Finding]:
    """Tokens whose bytes encode to something else (as encode_bytes encodes any text).  Only
    ids that are tokens are tried: an imported id space may have holes, ids no token has
    (cl100k_base has 16), which are no finding -- nothing can produce or decode them."""
    found: list[Finding] = []
    for i, raw in tok.vocab.items():  # every token in id order, no holes
        if tok.is_special_token(i):
            continue
        ids = tok.encode_bytes(raw)
        if ids != [i]:
            try:
                raw.decode("utf-8")
                partial = False
            except UnicodeDecodeError:
                partial = True
            found.append(Finding(i, raw, encodes_to=ids, partial=partial))
    return found


def counts_left(tok: Tokenizer) -> tuple[list[int], list[list[int]]] | None:
    """Per merge k: an upper bound on its token's count after training (0 = none left for
    sure), and the merges that used it as a part; None without merge counts."""
    counts = tok.merge_counts
    if counts is None:
        return None
    return merges_left(tok.merges, counts)


def merges_left(merges: Sequence[tuple[int, int]], counts: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """counts_left from the merges and their counts alone (prune.py uses it between runs)."""
    n = len(merges)
    left = list(counts)
    used_by: list[list[int]] = [[] for _ in range(n)]
    for k, (a, b) in enumerate(merges):
        for part in {a, b}:  # (x, x) takes at least its count of x, not twice its count
            if part >= 256:
                left[part - 256] -= counts[k]
                used_by[part - 256].append(256 + k)
    return [max(c, 0) for c in left], used_by


def _internal(tok: Tokenizer, internal_id: int) -> int:
    """The public id of mnemo's id (an imported vocabulary renumbers them)."""
    return internal_id if tok.id_map is None else tok.id_map[internal_id]


def inspect(tok: Tokenizer, corpus: Iterable[bytes] | None = None) -> Report:
    """The three lists for `tok`; the under-trained ones only when a held-out corpus is given."""
    unreachable = unreachable_tokens(tok)
    bounds = counts_left(tok)
    intermediate: list[Finding] | None = None
    n_merges = len(tok.merges)
    if bounds is not None:
        left, used_by = bounds
        assert tok.merge_counts is not None
        intermediate = [
            Finding(
                _internal(tok, 256 + k),
                tok.token_bytes(_internal(tok, 256 + k)),
                merge_count=tok.merge_counts[k],
                left=0,
                used_by=[_internal(tok, u) for u in used_by[k]],
            )
            for k in range(n_merges)
            if left[k] == 0 and tok.merge_counts[k] > 0
        ]
    report = Report(tok.n_vocab, unreachable, intermediate, None, None)
    if corpus is None:
        return report
    seen = np.zeros(tok.n_vocab, dtype=np.int64)
    for doc in corpus:
        ids = tok.encode_bytes(doc)
        if ids:
            seen += np.bincount(np.asarray(ids, dtype=np.int64), minlength=tok.n_vocab)
    report.corpus_tokens = int(seen.sum())
    never: list[Finding] = []
    far: list[Finding] = []
    if bounds is None:
        # no training counts: every merge token the corpus never produces
        for k in range(n_merges):
            i = _internal(tok, 256 + k)
            if seen[i] == 0:
                never.append(Finding(i, tok.token_bytes(i), seen=0))
    else:
        left, _ = bounds
        assert tok.merge_counts is not None
        merge_ids = [_internal(tok, 256 + k) for k in range(n_merges)]
        total_left = sum(left)
        total_seen = int(seen[merge_ids].sum()) if merge_ids else 0
        scale = total_seen / total_left if total_left else 0.0
        for k in range(n_merges):
            i = merge_ids[k]
            expected = left[k] * scale
            f = Finding(i, tok.token_bytes(i), merge_count=tok.merge_counts[k], left=left[k], seen=int(seen[i]), expected=expected)
            if seen[i] == 0 and left[k] > 0:
                never.append(f)
            elif expected >= MIN_EXPECTED and seen[i] * FAR_BELOW < expected:
                far.append(f)
        never.sort(key=lambda f: -(f.expected or 0.0))
        far.sort(key=lambda f: (f.seen or 0) / max(f.expected or 1.0, 1e-9))
    report.never = never
    report.far_below = far
    return report


def _shown(raw: bytes) -> str:
    return "'" + token_text(raw) + "'"


def display_width(text: str) -> int:
    """Columns `text` takes on a terminal: East Asian wide and fullwidth characters take two,
    combining marks and zero-width format characters none (wcwidth's rule, without its tables:
    unicodedata has what it needs).  len() misaligned the rows holding CJK tokens."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _pad(text: str, width: int, left: bool) -> str:
    fill = " " * max(0, width - display_width(text))
    return text + fill if left else fill + text


def format_report(report: Report, limit: int) -> str:
    """The lists as text tables, `limit` rows each (the totals always)."""
    lines: list[str] = []

    def section(title: str, items: list[Finding], columns: list[str], cells: list[list[str]], more: str = "") -> None:
        lines.append(f"{title}: {len(items)}{more}")
        if not items:
            lines.append("")
            return
        shown = cells[:limit]
        widths = [max(display_width(c), *(display_width(r[j]) for r in shown)) for j, c in enumerate(columns)]
        for r in [columns, *shown]:
            lines.append("  " + "  ".join(_pad(v, w, left=j == 1) for j, (v, w) in enumerate(zip(r, widths))).rstrip())
        if len(items) > limit:
            lines.append(f"  ... {len(items) - limit} more (--limit)")
        lines.append("")

    u = report.unreachable
    partial = sum(f.partial for f in u)
    section(
        "unreachable (their own bytes encode to other ids)",
        u,
        ["id", "bytes", "encodes to", "partial"],
        [[str(f.id), _shown(f.raw), " ".join(map(str, f.encodes_to)), "yes" if f.partial else ""] for f in u],
        f", {partial} of them partial (part of a character: reached only inside text that completes it)" if partial else "",
    )
    if report.intermediate is None:
        lines.append("intermediate only: unknown (the tokenizer file holds no merge counts)")
        lines.append("")
    else:
        m = report.intermediate
        section(
            "intermediate only (every occurrence consumed by later merges in training)",
            m,
            ["id", "bytes", "merge count", "consumed by"],
            [[str(f.id), _shown(f.raw), str(f.merge_count), " ".join(map(str, f.used_by[:6])) + (" ..." if len(f.used_by) > 6 else "")] for f in m],
        )
    if report.never is None or report.far_below is None:
        lines.append("under-trained: give a held-out corpus (--corpus FILE) to find them")
        return "\n".join(lines).rstrip() + "\n"
    lines.append(f"held-out corpus: {report.corpus_tokens} tokens")
    lines.append("")
    n = report.never
    section(
        "never produced by the held-out corpus",
        n,
        ["id", "bytes", "merge count", "left", "expected"],
        [[str(f.id), _shown(f.raw), _opt(f.merge_count), _opt(f.left), _num(f.expected)] for f in n],
    )
    fb = report.far_below
    section(
        f"far below their training count (seen < expected / {FAR_BELOW}, expected >= {MIN_EXPECTED:g})",
        fb,
        ["id", "bytes", "merge count", "left", "expected", "seen"],
        [[str(f.id), _shown(f.raw), _opt(f.merge_count), _opt(f.left), _num(f.expected), _opt(f.seen)] for f in fb],
    )
    return "\n".join(lines).rstrip() + "\n"


def _opt(v: int | None) -> str:
    return "-" if v is None else str(v)


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"
