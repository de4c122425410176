r"""Split patterns: the presets, and the one entry point the rest of mnemo uses to turn a pattern
name or a regex into something the pre-tokenizer runs.

    compile_pattern("llama3")                          a preset, with its reference engine's Unicode
    compile_pattern(r"'s|'t| ?\p{L}+|...")             any split regex
    compile_pattern("cl100k", unicode="tiktoken")      a preset with another Unicode table

give a SplitPattern: `.regex` (the regex, for one-regex patterns), `.steps` (a preset of several
split steps: DeepSeek-V3, StarCoder2), `.engine` ("scanner": compiled into mnemo's scanner, or
"regex": run by the `regex` module), `.unicode` (the Unicode version its classes follow), `.id`
(the handle the compiled hot loops take) and `.program` (the pretokenize.SplitProgram).

Unicode versions.  The classes of a split regex (\p{L}, \p{N}, \s, ...) depend on the Unicode
version of the engine that runs it, and the reference engines are older than mnemo's own tables:
tiktoken 0.14 (Rust's regex) and tokenizers 0.23 (Oniguruma) hold Unicode 16.0, the `regex`
module (mnemo's default, and its tests' oracle) Unicode 18.0; tokenizers' Digits pre-tokenizer
tests Rust's char::is_numeric, of Unicode 17.0 (mnemo/_unicode_data.py, probed from each).
`unicode` takes a version ("16.0.0") or an engine ("tiktoken", "tokenizers", "regex").  Each
preset names the engine its model's own tokenizer runs on; a regex given as a string and the
five named patterns default to "regex" (18.0.0), which is what tokenizer.bin files written
before the version was recorded were made with.  A regex outside the family runs through the
`regex` module on any of these tables: on another than its own, rewritten where the two differ
(mnemo/regex_tables.py); what cannot be rewritten is a ConfigError naming it when the table was
asked for.

Compiling.  A SplitPattern is built once per process for each steps and table (`_build`).  The
presets' steps are not compiled even then: their programs, over every Unicode table mnemo has,
were compiled when mnemo was developed (mnemo/stored_programs.py; 41-237 ms a pattern saved in
every new process), and a regex that is byte for byte a preset's step takes them too.

Ids.  The five named patterns keep the ids tokenizer.bin v2 stores (constants.PATTERNS: 0-4).
Every other SplitPattern gets the next free handle when it is first compiled in a process: a
handle is only valid in that process and is never stored (tokenizer.bin v3 stores the regex and
the Unicode version instead; docs/pretokenizer.md).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, replace
from typing import Final, overload

import regex

from mnemo import _unicode_data as udata
from mnemo import pretokenize as pt
from mnemo import regex_family as rf
from mnemo import regex_tables as rt
from mnemo.constants import PATTERNS
from mnemo.errors import ConfigError, InputError
from mnemo.stored_programs import stored

BEHAVIORS: Final = {
    "isolated": pt.ISOLATED,
    "contiguous": pt.CONTIGUOUS,
    "merged_with_previous": pt.MERGED_WITH_PREVIOUS,
    "merged_with_next": pt.MERGED_WITH_NEXT,
}


@dataclass(frozen=True)
class SplitStep:
    """One split of a pattern.  kind "regex": the pieces are the regex's matches and the gaps
    between them (Hugging Face's Split pre-tokenizer); kind "digits": tokenizers' Digits
    pre-tokenizer, which splits at Rust's char::is_numeric (behavior "isolated" for
    individual_digits, "contiguous" for runs).  `unicode` None: the pattern's table.
    `unmatched` "refuse" (an isolated, not inverted regex step only): text no match covers is an
    InputError instead of a piece of its own -- tiktoken's rule is to drop it, which mnemo will
    not do silently (refusing() below; docs/pretokenizer.md, "Text the pattern does not match")."""

    regex: str
    behavior: str = "isolated"
    invert: bool = False
    kind: str = "regex"
    unicode: str | None = None
    unmatched: str = "keep"


@dataclass(frozen=True)
class Preset:
    steps: tuple[SplitStep, ...]
    engine: str  # whose Unicode tables the model's own tokenizer uses: an udata.ENGINES key
    source: str  # where the regex was taken from (docs/pretokenizer.md)


GPT2_BYTELEVEL: Final = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3: Final = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2: Final = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
TEKKEN: Final = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
    r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
DEEPSEEK_V3: Final = (
    r"""\p{N}{1,3}""",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
)

PRESETS: Final[dict[str, Preset]] = {
    **{name: Preset((SplitStep(pt.PATTERN_REGEX[name]),), "regex", "mnemo") for name in PATTERNS},
    "llama3": Preset((SplitStep(LLAMA3),), "tiktoken", "meta-llama/llama3 llama/tokenizer.py pat_str"),
    "qwen2": Preset(
        (SplitStep(QWEN2),), "tokenizers", "transformers models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX"
    ),
    "tekken": Preset(
        (SplitStep(TEKKEN),),
        "tiktoken",
        "the pattern of Mistral's tekken.json, as transformers restores it (fix_mistral_regex) and "
        "its GGUF map spells it (_TEKKEN_SPLIT)",
    ),
    "deepseek-v3": Preset(
        tuple(SplitStep(r) for r in DEEPSEEK_V3),
        "tokenizers",
        "DeepSeek-V3's tokenizer.json: a Sequence of three Isolated Splits, then ByteLevel without its "
        "regex (as llama.cpp's llama-vocab.cpp 'deepseek-v3' and mistral.rs list them)",
    ),
    "o200k_harmony": Preset(
        (SplitStep(pt.PATTERN_REGEX["o200k"]),),
        "tiktoken",
        "tiktoken_ext/openai_public.py o200k_harmony (o200k_base's pat_str)",
    ),
    "starcoder2": Preset(
        (SplitStep(r"\p{N}", kind="digits"), SplitStep(GPT2_BYTELEVEL)),
        "tokenizers",
        "StarCoder2's tokenizer.json: a Sequence of Digits(individual_digits) and ByteLevel(use_regex), "
        "whose regex is tokenizers' byte_level.rs",
    ),
}


def unicode_version(unicode: str) -> str:
    """A Unicode table name: a version mnemo has, or the version an engine holds."""
    if unicode in udata.VERSIONS:
        return unicode
    if unicode in udata.ENGINES:
        return udata.ENGINES[unicode]
    raise ConfigError(
        f"unknown Unicode version or engine {unicode!r}; use one of {', '.join(udata.VERSIONS)} or "
        f"{', '.join(udata.ENGINES)} (docs/pretokenizer.md, 'Unicode versions')"
    )


@dataclass(frozen=True, eq=False)
class SplitPattern:
    """A compiled split pattern (see the module docstring)."""

    spec: str
    name: str | None
    steps: tuple[SplitStep, ...]
    unicode: str
    engines: tuple[str, ...]  # per step: "scanner" or "regex"
    reasons: tuple[str, ...]  # per step: why it runs through `regex` ("" when compiled)
    id: int
    program: pt.SplitProgram
    # per step: why it runs on the `regex` module's own tables rather than `unicode` ("" when it
    # follows `unicode`: compiled, or rewritten by regex_tables)
    off_table: tuple[str, ...] = ()

    @property
    def regex(self) -> str | None:
        """The regex of a one-regex pattern (None for a sequence of steps)."""
        if len(self.steps) == 1 and self.steps[0].kind == "regex":
            return self.steps[0].regex
        return None

    @property
    def engine(self) -> str:
        """"scanner" when every step is compiled into mnemo's scanner, else "regex"."""
        return "scanner" if all(e == "scanner" for e in self.engines) else "regex"

    def to_dict(self) -> dict[str, object]:
        """What a file stores to make this pattern again, whatever mnemo's presets become: the
        steps (regex, behavior, invert, kind, and a step's own Unicode version if it has one), the
        Unicode version, and the preset name as a label.  pattern_from_dict reads it."""
        steps: list[dict[str, object]] = []
        for step in self.steps:
            d: dict[str, object] = {"regex": step.regex, "behavior": step.behavior, "invert": step.invert, "kind": step.kind}
            if step.unicode is not None:
                d["unicode"] = step.unicode
            if step.unmatched != "keep":
                d["unmatched"] = step.unmatched
            steps.append(d)
        return {"name": self.name, "unicode": self.unicode, "steps": steps}

    def describe(self) -> str:
        """One line for `mnemo info`: the pattern, its engine and its Unicode version."""
        label = self.name if self.name is not None else repr(self.spec if len(self.spec) <= 60 else self.spec[:57] + "...")
        what = "mnemo's scanner" if self.engine == "scanner" else "the regex module (outside the compiled family)"
        steps = f", {len(self.steps)} split steps" if len(self.steps) > 1 else ""
        off = next((why for why in self.off_table if why), "")
        tables = f"Unicode {self.unicode}" if not off else f"the regex module's Unicode {udata.DEFAULT}, not {self.unicode} ({off})"
        return f"{label}: {what}, {tables}{steps}"


# A spec that is only a name is a misspelt preset, not a regex (it would split off nothing but
# itself).
_NAME_LIKE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_LOCK = threading.Lock()
_REGISTRY: list[SplitPattern | None] = [None] * len(PATTERNS)


def _check_regex(text: str) -> regex.Pattern[str]:
    try:
        return regex.compile(text)
    except regex.error as err:
        raise ConfigError(f"split regex {text!r} does not compile: {err}") from None


def _not_followed(step: SplitStep, reason: str, table: str) -> ConfigError:
    return ConfigError(
        f"split regex {step.regex!r} is outside the family mnemo compiles, so the `regex` module runs it, "
        f"and it cannot be made to match on Unicode {table}'s tables as asked: {reason}; pass unicode=None "
        f"(or 'regex') to run it on the regex module's own Unicode {udata.DEFAULT} tables"
    )


def _step_program(step: SplitStep, table: str, explicit: bool) -> tuple[pt.SplitProgram, str, str, str]:
    """(program, engine, reason it is not compiled, reason it does not follow `table`) of one step.
    A regex outside the family follows `table` through regex_tables (its sets rewritten where the
    `regex` module's tables differ); one it cannot carry over runs on `regex`'s own tables, or
    with `explicit` is refused."""
    c = stored(step.kind, step.regex, table)  # a preset's step: compiled ahead (stored_programs.py)
    if c is not None:
        return _scan_program(c), "scanner", "", ""
    try:
        if step.kind == "digits":
            branches = rf.digits_branches()
        else:
            _check_regex(step.regex)
            branches = rf.parse(step.regex, table)
        c = rf.compile_branches(branches, table)
    except rf.NotInFamily as err:
        if step.kind == "digits":
            raise AssertionError(f"the digits step does not compile: {err}") from None
        try:
            tr = rt.table_regex(step.regex, table)
        except rt.NotFollowed as nf:
            if explicit:
                raise _not_followed(step, str(nf), table) from None
            return pt.regex_program(_check_regex(step.regex)), "regex", str(err), str(nf)
        return pt.regex_program(tr.native, tr.rewritten, tr.marks), "regex", str(err), ""
    return _scan_program(c), "scanner", "", ""


def _scan_program(c: rf.Compiled) -> pt.SplitProgram:
    return pt.scan_program(
        c.n_atoms, c.ascii, c.stage1, c.stage2, c.shift, c.invalid_atom, c.code, c.branch_at,
        c.cand_at, c.cands, c.masks, c.groups, c.act1, c.act2, c.act3, c.whites, c.follows, c.caseds, c.pair, c.tri, c.start_mask,
    )  # fmt: skip


_CACHE: dict[tuple[str | None, tuple[SplitStep, ...], str], SplitPattern] = {}


def _build(spec: str, name: str | None, steps: tuple[SplitStep, ...], table: str, explicit: bool) -> SplitPattern:
    """Compile the steps of a pattern (once per process for each steps and table)."""
    key = (name, steps, table)
    found = _CACHE.get(key)
    if found is not None:
        if explicit:
            for step, why in zip(found.steps, found.off_table):
                if why:
                    raise _not_followed(step, why, table)
        return found
    if not steps:
        raise ConfigError("a split pattern needs at least one step")
    programs: list[pt.SplitProgram] = []
    engines: list[str] = []
    reasons: list[str] = []
    off_table: list[str] = []
    for step in steps:
        if step.behavior not in BEHAVIORS:
            raise ConfigError(f"unknown split behavior {step.behavior!r}; use one of {', '.join(BEHAVIORS)}")
        if step.kind not in ("regex", "digits"):
            raise ConfigError(f"unknown split step kind {step.kind!r}; use 'regex' or 'digits'")
        if step.unmatched not in ("keep", "refuse"):
            raise ConfigError(f"unknown unmatched-text rule {step.unmatched!r}; use 'keep' or 'refuse'")
        if step.unmatched == "refuse" and (step.kind != "regex" or step.behavior != "isolated" or step.invert):
            raise ConfigError("unmatched='refuse' is for an isolated, not inverted regex step (a match is a piece)")
        prog, engine, reason, off = _step_program(step, step.unicode or table, explicit)
        programs.append(prog)
        engines.append(engine)
        reasons.append(reason)
        off_table.append(off)
    if len(programs) == 1 and steps[0].behavior == "isolated" and not steps[0].invert and steps[0].unmatched == "keep":
        program = programs[0]
    else:
        behaviors = [
            BEHAVIORS[s.behavior] | (pt.INVERT if s.invert else 0) | (pt.REFUSE_UNMATCHED if s.unmatched == "refuse" else 0)
            for s in steps
        ]
        program = pt.sequence_program(programs, behaviors)
    named = name in PATTERNS and table == udata.DEFAULT and steps == PRESETS[name].steps
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            return found
        pid = PATTERNS.index(name) if named and name is not None else len(_REGISTRY)
        pattern = SplitPattern(spec, name, steps, table, tuple(engines), tuple(reasons), pid, program, tuple(off_table))
        if pid < len(_REGISTRY):
            _REGISTRY[pid] = pattern
        else:
            _REGISTRY.append(pattern)
        _CACHE[key] = pattern
    return pattern


def compile_pattern(spec: str | SplitPattern, unicode: str | None = None, *, default: str = "regex") -> SplitPattern:
    """The SplitPattern of a preset name or a split regex (compiled once per process; see the
    module docstring).  Raises ConfigError for a regex that does not compile, an unknown Unicode
    version, or a regex outside the family with an explicit `unicode` the `regex` module cannot
    follow.  `default`: the tables a split regex follows when `unicode` is None ("tiktoken" for
    an imported rank file: its reference engine's); a regex outside the family that cannot follow
    them then runs on the `regex` module's own, and its description says why (off_table)."""
    if isinstance(spec, SplitPattern):
        if unicode is None or unicode_version(unicode) == spec.unicode:
            return spec
        if spec.name is None:
            return compile_steps(spec.steps, unicode)
        spec = spec.name
    if not isinstance(spec, str):
        raise ConfigError(f"a split pattern is a preset name or a regex string, not {type(spec).__name__}")
    preset = PRESETS.get(spec)
    if preset is not None:
        table = unicode_version(unicode if unicode is not None else preset.engine)
        return _build(spec, spec, preset.steps, table, unicode is not None)
    if not spec:
        raise ConfigError("an empty split pattern; give a preset name or a regex")
    if _NAME_LIKE.fullmatch(spec):
        raise ConfigError(
            f"unknown pattern {spec!r}: not a preset -- use one of {', '.join(repr(n) for n in PRESETS)} (default "
            "'mnemonic') -- nor a split regex"
        )
    table = unicode_version(unicode if unicode is not None else default)
    return _build(spec, None, (SplitStep(spec),), table, unicode is not None)


def looks_like_a_name(spec: str) -> bool:
    """Is `spec` a bare name (a misspelt preset, since as a regex it would match only itself)?"""
    return _NAME_LIKE.fullmatch(spec) is not None


def compile_steps(
    steps: tuple[SplitStep, ...] | list[SplitStep], unicode: str, name: str | None = None, strict: bool = True
) -> SplitPattern:
    """A pattern of split steps applied in order, each to the pieces of the one before (Hugging
    Face's Sequence of Split and Digits pre-tokenizers): what a tokenizer.json importer builds.
    `unicode` is required: the version (or engine) the steps' classes follow.  A step outside
    the family runs through `regex`, whose tables are its own: with `strict` (the default) that
    is a ConfigError unless `unicode` is the `regex` module's version."""
    steps = tuple(steps)
    for step in steps:
        if not isinstance(step, SplitStep):
            raise ConfigError(f"a split step is a SplitStep, not {type(step).__name__}")
    spec = steps[0].regex if len(steps) == 1 and steps[0].kind == "regex" else f"<{len(steps)} split steps>"
    return _build(name or spec, name, steps, unicode_version(unicode), strict)


def refusing(sp: SplitPattern) -> SplitPattern:
    """The pattern for a tokenizer that follows tiktoken's rules (a .tiktoken file with a regex, a
    tekken file, tiktoken's Encoding constructor): where its regex leaves text unmatched tiktoken
    drops that text, so mnemo's ids could only equal tiktoken's by losing it; this pattern makes
    such text an InputError instead (SplitStep.unmatched).  The presets match every character,
    so they stay as they are (tests/test_unmatched_text.py checks that), as does a sequence of
    steps (Hugging Face's Split, which keeps such text)."""
    if (sp.name in PRESETS and sp.steps == PRESETS[sp.name].steps) or len(sp.steps) != 1:
        return sp
    step = sp.steps[0]
    if step.kind != "regex" or step.behavior != "isolated" or step.invert or step.unmatched == "refuse":
        return sp
    if any(step.regex == p.steps[0].regex and len(p.steps) == 1 for p in PRESETS.values()):
        return sp  # a preset's regex, spelt out (a tekken file's own pattern is the tekken preset's)
    empty = empty_match(step.regex)
    if empty is not None:
        where = "in an empty text" if empty == "" else f"at the start of {empty!r}"
        raise ConfigError(
            f"the split regex {step.regex!r} matches the empty string ({where}): tiktoken's engine skips the "
            f"character after such a match, dropping it, and fails outright on an empty piece, while the "
            f"`regex` module goes on to match that character, so no ids here could be the reference's; make "
            f"every alternative match at least one character"
        )
    # not strict: a regex that ran on the `regex` module's own tables (off_table) still does
    return compile_steps((replace(step, unmatched="refuse"),), sp.unicode, sp.name, strict=False)


#: Texts at whose start refusing() tries a regex for an empty match: each kind of character a
#: split regex's alternatives tell apart, alone and after a space.
EMPTY_PROBES: Final = (
    "", "a", "A", "1", "\u0661", " ", "  ", "\n", "\r\n", "\t", ";", "'", "'s", "\u00e9", "\u4e2d", "\U0001f600",
    "\u0301", " a", " 1", " ;", " \u4e2d", "_", "-",
)  # fmt: skip


def empty_match(source: str) -> str | None:
    """A probe (EMPTY_PROBES) at whose start `source` matches the empty string, or None.  A
    split regex that can (`\\p{N}*`, `x?`, a lookaround alone) splits otherwise in tiktoken's
    engine, which skips a character after an empty match and panics on an empty piece."""
    rx = regex.compile(source)
    for probe in EMPTY_PROBES:
        m = rx.match(probe)
        if m is not None and m.end() == 0:
            return probe
    return None


def program_of(pid: int) -> pt.SplitProgram:
    """The program of a pattern handle (a named pattern's id, or SplitPattern.id)."""
    if 0 <= pid < len(PATTERNS):
        found = _REGISTRY[pid]
        if found is None:
            found = compile_pattern(PATTERNS[pid])
        return found.program
    if pid < 0 or pid >= len(_REGISTRY):
        known = ", ".join(f"{i} ({name})" for i, name in enumerate(PATTERNS))
        raise ConfigError(f"unknown pre-tokenizer pattern id {pid}; use one of {known}, or compile_pattern(...).id")
    found = _REGISTRY[pid]
    assert found is not None
    return found.program


def pattern_of(pid: int) -> SplitPattern:
    """The SplitPattern of a handle."""
    program_of(pid)
    found = _REGISTRY[pid]
    assert found is not None
    return found


def regex_of(sp: SplitPattern, what: str) -> str:
    """The one regex of a pattern, for an export to `what` (a format that holds one regex);
    ConfigError for a sequence of steps."""
    if sp.regex is None:
        raise ConfigError(f"{what} holds one split regex; the pattern {sp.describe()} is a sequence of split steps")
    return sp.regex


def identity(sp: SplitPattern) -> str:
    """The string a tokenizer's fingerprint hashes for its pattern: a named pattern on mnemo's
    own Unicode table is its name (so fingerprints made before stay as they were); any other
    pattern is the JSON of its steps and Unicode version (two spellings of one pattern -- a preset
    name and its regex -- are one pattern)."""
    if sp.id < len(PATTERNS) and sp.name is not None:
        return sp.name
    d = sp.to_dict()
    return json.dumps({"steps": d["steps"], "unicode": d["unicode"]}, sort_keys=True, separators=(",", ":"))


def label(sp: SplitPattern) -> str:
    """How a tokenizer names its pattern (Tokenizer.pattern): the preset's name, else the regex
    (a sequence of steps without a name: its identity)."""
    if sp.name is not None:
        return sp.name
    return sp.regex if sp.regex is not None else identity(sp)


def stored_id(sp: SplitPattern) -> int | None:
    """The id tokenizer.bin v2 stores for this pattern, or None when it is not one of the five
    named patterns on mnemo's own Unicode table (then only tokenizer.bin v3 can hold it: its
    to_dict())."""
    return sp.id if sp.id < len(PATTERNS) else None


def cuts_at_word_gaps(sp: SplitPattern) -> bool:
    """Does a chunk end before every space between two ASCII letters, the text on each side
    splitting on its own as inside the whole (constants' pattern property
    "cut_before_space_letter", where sources cuts input files into tasks)?  Known for the
    presets on any Unicode table (tests/test_patterns.py checks each); a regex of one's own is
    not assumed to have it (training then keeps each document whole in one task)."""
    return any(sp.steps == preset.steps for preset in PRESETS.values())


_HANDLES: dict[str, int] = {}


def handle(key: str) -> int:
    """The handle in this process of the pattern whose to_dict() is the JSON `key`: how a
    pattern travels to worker processes (a handle is only valid in the process that made it)."""
    found = _HANDLES.get(key)
    if found is None:
        found = pattern_from_dict(json.loads(key)).id
        _HANDLES[key] = found
    return found


def key_of(sp: SplitPattern) -> str:
    """The JSON that handle() takes: the pattern's to_dict()."""
    return json.dumps(sp.to_dict(), sort_keys=True, separators=(",", ":"))


def for_counting(spec: str | SplitPattern) -> tuple[SplitPattern, str, bool]:
    """compile_pattern(spec) with what a counting run needs of it, in one call: its key_of (how
    it travels to workers) and cuts_at_word_gaps (whether inputs may be cut at word gaps)."""
    sp = compile_pattern(spec)
    return sp, key_of(sp), cuts_at_word_gaps(sp)


def pattern_from_dict(d: object, where: str = "pattern") -> SplitPattern:
    """The SplitPattern a SplitPattern.to_dict() describes; ConfigError naming the field (`where`
    says where the dict came from) for anything else."""

    def bad(what: str) -> ConfigError:
        return ConfigError(f"{where}: {what}")

    if not isinstance(d, dict):
        raise bad(f"a split pattern is a JSON object with 'steps' and 'unicode', not {type(d).__name__}")
    name = d.get("name")
    unicode = d.get("unicode")
    raw = d.get("steps")
    if name is not None and not isinstance(name, str):
        raise bad(f"'name' must be a string or null, not {name!r}")
    if not isinstance(unicode, str):
        raise bad(f"'unicode' must be a Unicode version string, not {unicode!r}")
    if not isinstance(raw, list) or not raw:
        raise bad(f"'steps' must be a non-empty list, not {raw!r}")
    steps: list[SplitStep] = []
    for k, item in enumerate(raw):
        if not isinstance(item, dict):
            raise bad(f"steps[{k}] must be an object, not {item!r}")
        regex_text = item.get("regex")
        behavior = item.get("behavior", "isolated")
        invert = item.get("invert", False)
        kind = item.get("kind", "regex")
        step_unicode = item.get("unicode")
        unmatched = item.get("unmatched", "keep")
        if not isinstance(regex_text, str) or not isinstance(behavior, str) or not isinstance(kind, str):
            raise bad(f"steps[{k}] needs string 'regex', 'behavior' and 'kind', got {item!r}")
        if unmatched not in ("keep", "refuse"):
            raise bad(f"steps[{k}]: 'unmatched' must be \"keep\" or \"refuse\", not {unmatched!r}")
        if not isinstance(invert, bool) or (step_unicode is not None and not isinstance(step_unicode, str)):
            raise bad(f"steps[{k}]: 'invert' must be true or false and 'unicode' a string, got {item!r}")
        steps.append(SplitStep(regex_text, behavior, invert, kind, step_unicode, str(unmatched)))
    try:
        if name in PRESETS and tuple(steps) == PRESETS[name].steps:
            return compile_pattern(name, unicode)
        return compile_steps(steps, unicode, name)
    except ConfigError as err:
        raise bad(str(err)) from None


# ---- the user API --------------------------------------------------------------------------


def chunk_end(data: bytes, pos: int, end: int, pattern: int | SplitPattern) -> int:
    """The end of the chunk that starts at `pos` in the text data[:end] (the hot loops call
    pretokenize.scan with the program itself; this checks its arguments)."""
    if pos < 0 or pos >= end or end > len(data):
        raise ConfigError(f"chunk_end needs 0 <= pos < end <= len(data), got pos={pos}, end={end}, len={len(data)}")
    prog = pattern.program if isinstance(pattern, SplitPattern) else program_of(pattern)
    return pt.scan(prog, data, pos, end)


def chunk_count(data: bytes, pattern: int | SplitPattern) -> int:
    """How many chunks `data` splits into."""
    prog = pattern.program if isinstance(pattern, SplitPattern) else program_of(pattern)
    return pt.count_chunks(prog, data)


@overload
def split(text: str, pattern: str | SplitPattern = "mnemonic", unicode: str | None = None) -> list[str]: ...
@overload
def split(text: bytes, pattern: str | SplitPattern = "mnemonic", unicode: str | None = None) -> list[bytes]: ...
def split(text: str | bytes, pattern: str | SplitPattern = "mnemonic", unicode: str | None = None) -> list[str] | list[bytes]:
    """Cut text into pre-tokenizer chunks: str in, list of str out; bytes in, list of bytes out.

    `pattern` is a preset name ("mnemonic", the default, "gpt4", "gpt2", "o200k", "cl100k",
    "llama3", "qwen2", "tekken", "deepseek-v3", "o200k_harmony", "starcoder2"), a split regex,
    or a SplitPattern.  The chunks join back to `text`.  For one regex, on valid UTF-8 they are
    exactly what `regex.finditer` matches, with any text no match covers as chunks of its own;
    invalid UTF-8 bytes are one-byte characters of the class the `regex` module gives a lone
    surrogate.  A str holding a lone surrogate (which has no UTF-8 form) raises InputError.
    """
    prog = compile_pattern(pattern, unicode).program
    if isinstance(text, str):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise InputError(
                f"text holds the lone surrogate U+{ord(text[err.start]):04X} at index {err.start}, which "
                "UTF-8 cannot encode; split its bytes instead, e.g. split(text.encode('utf-8', 'surrogatepass'))"
            ) from None
        return pt.cut_str(prog, text, data)
    return pt.cut_bytes(prog, text, len(text))
