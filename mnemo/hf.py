"""transformers, encoding through mnemo (issue 26 item 8; docs/interop.md, "transformers").

    import mnemo.hf
    mnemo.hf.patch_transformers()
    tok = transformers.AutoTokenizer.from_pretrained(folder)   # encodes through mnemo

`patch_transformers()` makes every fast tokenizer transformers builds from then on
(`TokenizersBackend`, which PreTrainedTokenizerFast and the model classes are) keep its
`tokenizers.Tokenizer` inside a `MnemoBackend`: an object that answers to every name of the
tokenizers object by handing the call to it, except `encode` and `encode_batch`, which
run mnemo's pipeline (mnemo/formats/hf_pipeline.py, hf_encoding.py) on the tokenizer as it
stands at that moment -- tokenizer.json, then whatever transformers changed on load
(tokenizer_config.json's added tokens, add_bos_token's template, ...), read back with
`to_str()` -- with its truncation and padding.  The Encodings it returns are tokenizers' own,
field for field: ids, type ids, tokens, offsets, word ids, masks, overflowing parts.
`use_mnemo(tokenizer)` does the same to one tokenizer already loaded.

A tokenizer mnemo does not hold exactly (a SentencePiece model, WordPiece, a normalizer or
pre-tokenizer outside the byte-level family...) keeps tokenizers' own encoder: the first
encode warns once (MnemoFallbackWarning) with the tokenizer.json key mnemo refuses, and every
call then goes to tokenizers.  So does a text holding a lone surrogate (tokenizers raises its
own error for it).

Changes made by assigning the tokenizers object's attributes or calling add_tokens /
add_special_tokens through the backend are seen (the next encode reads the tokenizer again);
a change made inside one of its parts in place (`backend.model.dropout = ...`) is not.

Plain Python (not compiled): transformers and tokenizers are imported when used.
"""

from __future__ import annotations

import importlib
import json
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from mnemo.errors import ConfigError, FormatError
from mnemo.formats import hf_encoding
from mnemo.formats.hf_pipeline import HFTokenizer, from_json


class MnemoFallbackWarning(UserWarning):
    """A tokenizer mnemo does not hold exactly keeps tokenizers' own encoder (the message names why)."""


#: attribute writes that do not change what mnemo reads with to_str()
_LIVE: frozenset[str] = frozenset({"encode_special_tokens"})
#: methods of tokenizers.Tokenizer that change it
_MUTATORS: frozenset[str] = frozenset({"add_tokens", "add_special_tokens", "train", "train_from_iterator"})


class MnemoBackend:
    """A tokenizers.Tokenizer whose encode and encode_batch run through mnemo (module
    docstring).  `engine` says which encoder the last call used: "mnemo" or "tokenizers"."""

    def __init__(self, inner: Any) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_tok", None)
        object.__setattr__(self, "_reason", None)
        object.__setattr__(self, "engine", "mnemo")

    # ---- everything else is the tokenizers object's ----

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name in _MUTATORS and callable(value):

            def changed(*args: Any, **kwargs: Any) -> Any:
                out = value(*args, **kwargs)
                self._changed()
                return out

            return changed
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)
        if name not in _LIVE:
            self._changed()

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        # pickled (datasets.map workers, DataLoader workers) as the tokenizers object it wraps
        return (MnemoBackend, (self._inner,))

    def __deepcopy__(self, memo: dict[int, Any]) -> MnemoBackend:
        import copy

        return MnemoBackend(copy.deepcopy(self._inner, memo))

    def __repr__(self) -> str:
        return f"MnemoBackend({self._inner!r})"

    def _changed(self) -> None:
        with self._lock:
            object.__setattr__(self, "_tok", None)
            object.__setattr__(self, "_reason", None)

    def mnemo_tokenizer(self) -> HFTokenizer | None:
        """mnemo's tokenizer for the tokenizers object as it stands (None, with a warning the
        first time, when mnemo does not hold it exactly)."""
        with self._lock:
            if self._tok is None and self._reason is None:
                obj = json.loads(self._inner.to_str())
                try:
                    tok = from_json(obj, "<transformers tokenizer>", plain_ok=False, session=True)
                except FormatError as exc:
                    reason = str(exc).removeprefix("<transformers tokenizer>: ")
                    object.__setattr__(self, "_reason", reason)
                    warnings.warn(
                        f"mnemo does not hold this tokenizer exactly ({reason}); it keeps encoding with tokenizers",
                        MnemoFallbackWarning,
                        stacklevel=3,
                    )
                else:
                    assert isinstance(tok, HFTokenizer)
                    object.__setattr__(self, "_tok", tok)
            tok_or_none: HFTokenizer | None = self._tok
            return tok_or_none

    @property
    def fallback_reason(self) -> str | None:
        """Why tokenizers encodes (the key mnemo refuses), or None when mnemo does."""
        self.mnemo_tokenizer()
        reason: str | None = self._reason
        return reason

    # ---- the two calls transformers makes ----

    def encode(self, sequence: Any, pair: Any = None, is_pretokenized: bool = False, add_special_tokens: bool = True) -> Any:
        tok = self.mnemo_tokenizer()
        if tok is None or not _strings_ok(sequence) or not _strings_ok(pair):
            object.__setattr__(self, "engine", "tokenizers")
            return self._inner.encode(sequence, pair, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens)
        object.__setattr__(self, "engine", "mnemo")
        return self._one(tok, sequence, pair, is_pretokenized, add_special_tokens, self._inner.padding)

    def encode_batch(self, input: Sequence[Any], is_pretokenized: bool = False, add_special_tokens: bool = True) -> list[Any]:
        tok = self.mnemo_tokenizer()
        if tok is None or not all(_strings_ok(item) for item in input):
            object.__setattr__(self, "engine", "tokenizers")
            return list(self._inner.encode_batch(input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens))
        object.__setattr__(self, "engine", "mnemo")
        out = []
        for item in input:
            if isinstance(item, (tuple, list)) and len(item) == 2 and (not is_pretokenized or not isinstance(item[0], str)):
                sequence, pair = item
            else:
                sequence, pair = item, None
            out.append(self._one(tok, sequence, pair, is_pretokenized, add_special_tokens, None))
        padding = self._inner.padding
        if padding is not None:
            hf_encoding.pad(out, padding)
        return out

    def encode_batch_fast(self, input: Sequence[Any], is_pretokenized: bool = False, add_special_tokens: bool = True) -> list[Any]:
        return self.encode_batch(input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens)

    def _one(self, tok: HFTokenizer, sequence: Any, pair: Any, is_pretokenized: bool, add_special_tokens: bool, padding: Any) -> Any:
        return hf_encoding.encode(
            tok,
            sequence,
            pair,
            add_special_tokens=add_special_tokens,
            is_pretokenized=is_pretokenized,
            encode_special_tokens=bool(self._inner.encode_special_tokens),
            truncation=self._inner.truncation,
            padding=padding,
        )


def _strings_ok(value: Any) -> bool:
    """Whether every str in an input is valid text: tokenizers refuses a lone surrogate with its
    own error, which the call to it then raises."""
    if value is None:
        return True
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, (list, tuple)):
        return all(_strings_ok(v) for v in value)
    return True


def use_mnemo(tokenizer: Any) -> Any:
    """Make one transformers fast tokenizer encode through mnemo; returns it."""
    backend = tokenizer.__dict__.get("_tokenizer")
    if backend is None:
        raise ConfigError(f"{type(tokenizer).__name__} has no tokenizers backend (a fast tokenizer is needed)")
    if not isinstance(backend, MnemoBackend):
        tokenizer.__dict__["_tokenizer"] = MnemoBackend(backend)
    return tokenizer


_PATCHED: dict[str, Any] = {}


def patch_transformers() -> None:
    """From now on, every fast tokenizer transformers builds encodes through mnemo (module
    docstring).  Idempotent; `unpatch_transformers()` undoes it."""
    base = _backend_class()
    if "property" in _PATCHED:
        return

    def get(self: Any) -> Any:
        return self.__dict__.get("_tokenizer")

    def set_(self: Any, value: Any) -> None:
        if value is not None and not isinstance(value, MnemoBackend):
            value = MnemoBackend(value)
        self.__dict__["_tokenizer"] = value

    _PATCHED["property"] = base.__dict__.get("_tokenizer")
    base._tokenizer = property(get, set_)


def unpatch_transformers() -> None:
    """Undo patch_transformers (tokenizers already built keep their backend)."""
    if "property" not in _PATCHED:
        return
    base = _backend_class()
    base._tokenizer = _PATCHED.pop("property")


def _backend_class() -> Any:
    try:
        module = importlib.import_module("transformers.tokenization_utils_tokenizers")
    except ImportError:
        raise ConfigError("patch_transformers needs transformers 5 (pip install 'transformers>=5')") from None
    return module.TokenizersBackend


__all__ = ["MnemoBackend", "MnemoFallbackWarning", "patch_transformers", "unpatch_transformers", "use_mnemo"]
