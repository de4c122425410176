"""Ray Data: encode a text column of a Ray Dataset with `ds.map_batches(EncodeBatches, ...)`.

For pipelines that already hold their corpus as a Ray Dataset (docs/ray.md):

    ds = ds.map_batches(EncodeBatches, fn_constructor_args=("tokenizer.bin",), concurrency=8)

Ray builds the class once per actor, so the tokenizer is loaded once per actor (from its path, or
from a tokenizer.bin image when the nodes do not share a filesystem), never once per batch.  The
class imports nothing of Ray: Ray calls it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mnemo.errors import ArgumentTypeError, ConfigError
from mnemo.tokenizer import Tokenizer


class EncodeBatches:
    """A callable for `map_batches`: the batch's `text_column` (str or bytes per row) encoded into
    a new column `ids_column` of token-id arrays (uint16 or uint32, as a .tok would store them).

    Each document gets the separators `mnemo tokenize` gives it (mnemo.tokenizing.document_separators:
    <|bos|> or else <s> before it when the vocabulary has that, else <|endoftext|> after it); special-token text
    inside a document is plain text, as in `mnemo tokenize`.  `bos`/`eos` name other tokens, or
    None for none.  Every other column of the batch is kept."""

    def __init__(
        self,
        tokenizer: str | os.PathLike[str] | bytes,
        text_column: str = "text",
        ids_column: str = "ids",
        bos: str | None = "auto",
        eos: str | None = "auto",
    ) -> None:
        from mnemo.tokenizing import document_separators

        if isinstance(tokenizer, (str, os.PathLike)):
            self.tokenizer = Tokenizer.load(tokenizer)
        elif isinstance(tokenizer, bytes):
            self.tokenizer = Tokenizer.from_bytes(tokenizer, "<tokenizer.bin image>")
        else:
            raise ArgumentTypeError(f"tokenizer must be a tokenizer.bin path or its bytes, got {type(tokenizer).__name__}")
        if not isinstance(text_column, str) or not isinstance(ids_column, str):
            raise ArgumentTypeError("text_column and ids_column must be str")
        self.text_column = text_column
        self.ids_column = ids_column
        self.bos, self.eos = document_separators(self.tokenizer, bos, eos)

    def __call__(self, batch: Any) -> Any:
        """`batch`: a dict of numpy arrays (Ray Data's default) or a pandas DataFrame."""
        try:
            column = batch[self.text_column]
        except KeyError:
            have = ", ".join(str(c) for c in (batch.keys() if hasattr(batch, "keys") else []))
            raise ConfigError(f"the batch has no column {self.text_column!r} (it has: {have}); pass text_column=") from None
        out = np.empty(len(column), dtype=object)
        for i, text in enumerate(column):
            doc = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
            out[i] = self.tokenizer.encode_documents([doc], bos=self.bos, eos=self.eos)
        batch[self.ids_column] = out
        return batch
