"""The post-processor of a Hugging Face tokenizer.json: TemplateProcessing, ByteLevel and a
Sequence of them (docs/interop.md).

What it does in `tokenizers`:

* `TemplateProcessing` puts the template's special tokens around the sequence (`single`) or
  the two sequences (`pair`) when the caller asks for special tokens (`add_special_tokens=True`,
  tokenizers' and transformers' default; mnemo's option of the same name), and gives every
  token the template's type id either way;
* `ByteLevel` changes no id: with `trim_offsets` it takes the white space at the ends of a
  token out of its offsets (process_offsets in byte_level.rs, `trim` here);
* `Sequence` runs its processors in order.

RobertaProcessing, BertProcessing and any other processor are refused with a FormatError
naming the key.

Plain Python (not compiled).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemo.errors import FormatError
from mnemo.formats.common import BYTE_TO_CHAR, excerpt

#: GPT-2's spelling of the space byte, which ByteLevel's trimming counts as white space
_SPACE_CHAR = BYTE_TO_CHAR[0x20]


@dataclass(frozen=True)
class TemplatePiece:
    """A piece of a template: a sequence ("A" or "B") or a special token's name, with its type id."""

    sequence: str | None
    special: str | None
    type_id: int


@dataclass(frozen=True)
class Template:
    single: tuple[TemplatePiece, ...]
    pair: tuple[TemplatePiece, ...]
    #: name -> (ids, tokens)
    specials: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = field(default_factory=dict)

    def added(self, pair: bool) -> int:
        """How many ids the template adds (tokenizers' added_tokens(is_pair))."""
        pieces = self.pair if pair else self.single
        return sum(len(self.specials[p.special][0]) for p in pieces if p.special is not None)


@dataclass(frozen=True)
class Trim:
    """ByteLevel as a post-processor with trim_offsets (its add_prefix_space changes the first
    token's trim)."""

    add_prefix_space: bool


@dataclass(frozen=True)
class PostProcessor:
    """What mnemo keeps of a post-processor: its steps in order (a Template, or ByteLevel's
    offset trimming), and whether there is one at all (without one, tokenizers gives each
    sequence its index as type id)."""

    steps: tuple[Template | Trim, ...] = ()
    present: bool = False

    @property
    def template(self) -> Template | None:
        return next((s for s in self.steps if isinstance(s, Template)), None)


def parse_post_processor(obj: Any, source: str, key: str = "post_processor") -> PostProcessor:
    if obj is None:
        return PostProcessor()
    items: list[tuple[str, Any]] = []
    _flatten(obj, key, source, items)
    steps: list[Template | Trim] = []
    for where, item in items:
        kind = item.get("type")
        if kind == "ByteLevel":
            t = item.get("trim_offsets", True)
            p = item.get("add_prefix_space", True)
            for name, value in (("trim_offsets", t), ("add_prefix_space", p)):
                if not isinstance(value, bool):
                    raise FormatError(f"{source}: key '{where}.{name}' is {excerpt(value, 40)}, not true or false")
            if t:
                steps.append(Trim(p))
        elif kind == "TemplateProcessing":
            if any(isinstance(step, Template) for step in steps):
                raise FormatError(f"{source}: key '{where}': a second TemplateProcessing; mnemo takes one template")
            steps.append(_template(item, where, source))
        else:
            raise FormatError(
                f"{source}: key '{where}' is {excerpt(item, 120)}: mnemo applies the post-processors "
                f"TemplateProcessing and ByteLevel (or a Sequence of them) only"
            )
    return PostProcessor(tuple(steps), True)


def post_processor_json(post: PostProcessor) -> Any:
    """The tokenizer.json value that parse_post_processor reads back as `post` (a Sequence of
    its steps; null without one): how an HFTokenizer whose template a transformers folder
    replaced (mnemo/formats/load.py) travels to the work engine's workers."""
    if not post.present:
        return None
    items: list[dict[str, Any]] = []
    for step in post.steps:
        if isinstance(step, Trim):
            items.append({"type": "ByteLevel", "add_prefix_space": step.add_prefix_space, "trim_offsets": True})
            continue
        items.append({
            "type": "TemplateProcessing",
            "single": _pieces_json(step.single),
            "pair": _pieces_json(step.pair),
            "special_tokens": {
                name: {"id": name, "ids": list(ids), "tokens": list(tokens)} for name, (ids, tokens) in step.specials.items()
            },
        })
    return {"type": "Sequence", "processors": items}


def _pieces_json(pieces: tuple[TemplatePiece, ...]) -> list[dict[str, Any]]:
    return [
        {"Sequence": {"id": p.sequence, "type_id": p.type_id}}
        if p.sequence is not None
        else {"SpecialToken": {"id": p.special, "type_id": p.type_id}}
        for p in pieces
    ]


def _flatten(obj: Any, key: str, source: str, out: list[tuple[str, Any]]) -> None:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise FormatError(f"{source}: key '{key}' is {excerpt(obj, 80)}, not a post-processor object with a 'type'")
    if obj["type"] == "Sequence":
        items = obj.get("processors")
        if not isinstance(items, list):
            raise FormatError(f"{source}: key '{key}.processors' is {excerpt(items, 80)}, not a list")
        for j, item in enumerate(items):
            _flatten(item, f"{key}.processors[{j}]", source, out)
        return
    out.append((key, obj))


def _template(item: dict[str, Any], key: str, source: str) -> Template:
    raw_specials = item.get("special_tokens", {})
    if not isinstance(raw_specials, dict):
        raise FormatError(f"{source}: key '{key}.special_tokens' is {excerpt(raw_specials, 80)}, not an object")
    specials: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}
    for name, spec in raw_specials.items():
        where = f"{key}.special_tokens[{name!r}]"
        ids = spec.get("ids") if isinstance(spec, dict) else None
        tokens = spec.get("tokens") if isinstance(spec, dict) else None
        if (
            not isinstance(ids, list)
            or not isinstance(tokens, list)
            or len(ids) != len(tokens)
            or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)
            or not all(isinstance(t, str) for t in tokens)
        ):
            raise FormatError(f"{source}: key '{where}' needs 'ids' (integers) and 'tokens' (strings) of one length")
        specials[name] = (tuple(ids), tuple(tokens))

    def pieces(which: str) -> tuple[TemplatePiece, ...]:
        raw = item.get(which)
        if not isinstance(raw, list):
            raise FormatError(f"{source}: key '{key}.{which}' is {excerpt(raw, 80)}, not a list of template pieces")
        out: list[TemplatePiece] = []
        for j, piece in enumerate(raw):
            where = f"{key}.{which}[{j}]"
            if not isinstance(piece, dict) or len(piece) != 1:
                raise FormatError(f"{source}: key '{where}' is {excerpt(piece, 80)}, not a Sequence or SpecialToken piece")
            (kind, body), = piece.items()
            ident = body.get("id") if isinstance(body, dict) else None
            type_id = body.get("type_id", 0) if isinstance(body, dict) else None
            if not isinstance(ident, str) or not isinstance(type_id, int) or isinstance(type_id, bool) or type_id < 0:
                raise FormatError(f"{source}: key '{where}' needs a string 'id' and an integer 'type_id'")
            if kind == "Sequence":
                if ident not in ("A", "B"):
                    raise FormatError(f"{source}: key '{where}.id' is {ident!r}, not 'A' or 'B'")
                out.append(TemplatePiece(ident, None, type_id))
            elif kind == "SpecialToken":
                if ident not in specials:
                    raise FormatError(f"{source}: key '{where}.id' is {ident!r}, which special_tokens does not list")
                out.append(TemplatePiece(None, ident, type_id))
            else:
                raise FormatError(f"{source}: key '{where}' is a {kind!r} piece, not Sequence or SpecialToken")
        return tuple(out)

    return Template(pieces("single"), pieces("pair"), specials)


def trim(token: str, offsets: tuple[int, int], first: bool, add_prefix_space: bool) -> tuple[int, int]:
    """ByteLevel's process_offsets for one token (spelt in GPT-2's alphabet): its offsets
    without the white space at its ends.  `first`: the encoding's first token, or one whose
    offsets start at 0, where one leading space that add_prefix_space put there is kept."""
    lead = 0
    for ch in token:
        if ch == _SPACE_CHAR or ch.isspace():
            lead += 1
        else:
            break
    tail = 0
    for ch in reversed(token):
        if ch == _SPACE_CHAR or ch.isspace():
            tail += 1
        else:
            break
    start, end = offsets
    if lead:
        if first and add_prefix_space and lead == 1:
            lead = 0
        start = min(start + lead, end)
    if tail and end >= tail:
        end = max(end - tail, start)
    return start, end
