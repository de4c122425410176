"""Finding special-token names in a text: a byte trie walked from each position, compiled.

The Tokenizer used one `re` alternation over every name, longest first.  `re` tries each
alternative at each position, so a text costs O(len(text) x number of names): 1 MB of "<|"
with 57,016 names took about 45 s.  Here a position costs one table load when no name starts
with its byte, else one trie step per byte that some name continues with, so a text costs at
most O(len(text) x the longest name's length), whatever the number of names.

Semantics, the same as the alternation's (tests/test_special_match.py checks them against
`re` with hypothesis, and reference.find_specials_naive is the plain twin):
  * leftmost: the match that starts first wins;
  * at one start, the longest name wins (the alternation listed names longest first);
  * matches do not overlap: `find_all` goes on from the end of each match.
A name is bytes; the matcher reports its index in the list it was built from.  Empty names
are refused (they would match everywhere); a name listed twice keeps its first index.

`find` / `find_all` give (start, end, name index); `search` / `finditer` give Found objects with
the start(), end() and group() of re.Match, so that a matcher stands where the Tokenizer's
compiled alternation stood.

Layout: node 0 is the root.  `first[b]` is the root's child for byte b (0: none).  Node k's
children are `kids[start[k] : start[k] + count[k]]`, sorted by their byte `labels[...]`
(binary search), and `name[k]` is the index of the name that ends at node k (-1: none).
"""

from __future__ import annotations

from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

from mnemo.errors import ConfigError

# A match is packed as its end << 24 | its name's index in one i64: no tuple per candidate.
MAX_NAMES: Final = 1 << 24

# lacks: places of the prefix's first byte tried one by one before the whole prefix is searched
FIRST_BYTE_TRIES: Final = 8


def lacks(data: bytes, prefix: bytes) -> bool:
    """Whether `prefix` (not empty) is nowhere in `data`: the test that spares the matcher's walk
    of a text without special tokens (the default names share "<|").  The prefix's first byte
    is found with bytes.find of one byte (memchr: 1.0 ms for 5 MB of English documents, where
    `prefix in data` took 4.9 and the matcher 6.3); after FIRST_BYTE_TRIES places where the
    rest does not follow (code has many "<"), the whole prefix is searched from there, so a
    hostile text costs no more than `in` did."""
    first: bytes = prefix[:1]
    i: i64 = data.find(first)
    tries: i64 = 0
    while i >= 0:
        if data.startswith(prefix, i):
            return False
        tries += 1
        if tries == FIRST_BYTE_TRIES:
            return data.find(prefix, i + 1) < 0
        i = data.find(first, i + 1)
    return True


class SpecialMatcher:
    first: vec[i64]
    start: vec[i64]
    count: vec[i64]
    labels: vec[i64]
    kids: vec[i64]
    name: vec[i64]
    n_names: i64
    longest: i64
    names: list[bytes]

    def __init__(self, names: list[bytes]) -> None:
        # Build with one dict of children per node (once per set of names), then flatten it.
        children: list[dict[int, int]] = [{}]
        ends: list[int] = [-1]
        longest: i64 = 0
        if len(names) > MAX_NAMES:
            raise ConfigError(f"{len(names):,} special token names are more than {MAX_NAMES:,}, the most a matcher holds")
        for k, word in enumerate(names):
            if len(word) == 0:
                raise ConfigError(f"special token name {k} is empty; every name needs at least one byte")
            node = 0
            for b in word:
                nxt = children[node].get(b)
                if nxt is None:
                    nxt = len(children)
                    children[node][b] = nxt
                    children.append({})
                    ends.append(-1)
                node = nxt
            if ends[node] < 0:
                ends[node] = k
            if len(word) > longest:
                longest = len(word)
        n = len(children)
        first = vec[i64]([0] * 256)
        for b, child in children[0].items():
            first[b] = child
        start = vec[i64]([0] * n)
        count = vec[i64]([0] * n)
        labels = vec[i64]()
        kids = vec[i64]()
        name = vec[i64]([0] * n)
        for node in range(n):
            own = children[node]
            start[node] = len(labels)
            count[node] = len(own)
            for b in sorted(own):
                labels = append(labels, b)
                kids = append(kids, own[b])
            name[node] = ends[node]
        self.first = first
        self.start = start
        self.count = count
        self.labels = labels
        self.kids = kids
        self.name = name
        self.n_names = len(names)
        self.longest = longest
        self.names = list(names)

    def _child(self, node: i64, b: i64) -> i64:
        """Node's child for byte b, or 0 when it has none."""
        lo: i64 = self.start[node]
        hi: i64 = lo + self.count[node]
        labels = self.labels
        while lo < hi:
            mid: i64 = (lo + hi) >> 1
            x: i64 = labels[mid]
            if x == b:
                return self.kids[mid]
            if x < b:
                lo = mid + 1
            else:
                hi = mid
        return 0

    def _longest_at(self, data: bytes, i: i64, end: i64, node: i64) -> i64:
        """The longest name that starts at i and ends by `end`, packed as its end << 24 | its
        index (-1: none).  `node` is the root's child for data[i]."""
        best: i64 = -1
        j: i64 = i + 1
        names = self.name
        k: i64 = names[node]
        if k >= 0:
            best = (j << 24) | k
        while j < end:
            node = self._child(node, data[j])
            if node == 0:
                break
            j += 1
            k = names[node]
            if k >= 0:
                best = (j << 24) | k
        return best

    def find(self, data: bytes, pos: i64 = 0, end: i64 = -1) -> tuple[int, int, int] | None:
        """(start, end, name index) of the leftmost-longest name in data[pos:end] (end=-1:
        len(data)), or None."""
        if end < 0:
            end = len(data)
        if pos < 0 or pos > end or end > len(data):
            raise ConfigError(f"find needs 0 <= pos <= end <= len(data), got pos={pos}, end={end}, len={len(data)}")
        first = self.first
        i: i64 = pos
        while i < end:
            node: i64 = first[data[i]]
            if node != 0:
                found = self._longest_at(data, i, end, node)
                if found >= 0:
                    return (i, found >> 24, found & 0xFFFFFF)
            i += 1
        return None

    def find_all(self, data: bytes) -> list[tuple[int, int, int]]:
        """Every match of `find`, left to right, each one looked for from where the last match
        ended: (start, end, name index) for each."""
        out: list[tuple[int, int, int]] = []
        first = self.first
        end: i64 = len(data)
        i: i64 = 0
        while i < end:
            node: i64 = first[data[i]]
            if node != 0:
                found = self._longest_at(data, i, end, node)
                if found >= 0:
                    stop: i64 = found >> 24
                    out.append((i, stop, found & 0xFFFFFF))
                    i = stop
                    continue
            i += 1
        return out

    # The two methods of a compiled `re` pattern that the Tokenizer and streaming.safe_cut call,
    # so that a matcher stands where the alternation of every name stood.

    def search(self, data: bytes) -> Found | None:
        """The leftmost-longest name in data, as a Found (re.Pattern.search's use here)."""
        hit = self.find(data)
        if hit is None:
            return None
        return Found(hit[0], hit[1], self.names[hit[2]])

    def finditer(self, data: bytes) -> list[Found]:
        """Every name find_all finds, as Found objects."""
        names = self.names
        return [Found(a, b, names[k]) for a, b, k in self.find_all(data)]


class Found:
    """A name found in a text: the three methods of re.Match its callers use."""

    _start: int
    _end: int
    _name: bytes

    def __init__(self, start: int, end: int, name: bytes) -> None:
        self._start = start
        self._end = end
        self._name = name

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def group(self) -> bytes:
        return self._name
