"""mnemo: a fast, verifiable byte-level BPE tokenizer.

Train a vocabulary on documents held in memory (`mnemo.train` reads files: .txt, .jsonl,
.parquet, compressed or not), encode, decode, save and load:

>>> import os, tempfile
>>> import mnemo
>>> docs = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 20
>>> tok = mnemo.train_from_iterator(docs, vocab_size=300)
>>> ids = tok.encode("the cat sat on the log")
>>> tok.decode(ids)
'the cat sat on the log'
>>> [tok.decode_single_token_bytes(i) for i in ids]
[b'the', b' cat', b' sat', b' on', b' the', b' log']
>>> tok.encode("<|bos|>hi", allowed_special="all")[0] == tok.special_tokens["<|bos|>"]
True
>>> with tempfile.TemporaryDirectory() as folder:
...     tok.save(os.path.join(folder, "tokenizer.bin"))
...     loaded = mnemo.Tokenizer.load(os.path.join(folder, "tokenizer.bin"))
>>> loaded == tok and loaded.encode("the cat sat on the log") == ids
True

More in README.md and docs/ (docs/tiktoken.md: tiktoken's API and mnemo's side by side).
Re-exports only; each name lives in the module that owns it.
"""

from mnemo.errors import (
    ArgumentTypeError,
    ClusterError,
    ConfigError,
    FingerprintError,
    FormatError,
    InputError,
    InvalidUTF8Error,
    MnemoError,
    SpecialTokenError,
    UnknownTokenError,
    VerificationError,
    WorkerError,
)
from mnemo.interop import load_tiktoken  # and `mnemo.interop` bound, as `import mnemo` always did
from mnemo.formats.hf_pipeline import HFTokenizer
from mnemo.formats.load import load
from mnemo.shards import open_tok
from mnemo.patterns import split
from mnemo.tokenizer import Tokenizer
from mnemo.training import train, train_from_iterator
from mnemo.work_ray import RayOptions

from mnemo.buildinfo import VERSION as __version__

__all__ = [
    "ArgumentTypeError",
    "ClusterError",
    "ConfigError",
    "FingerprintError",
    "FormatError",
    "HFTokenizer",
    "InputError",
    "InvalidUTF8Error",
    "MnemoError",
    "RayOptions",
    "SpecialTokenError",
    "Tokenizer",
    "UnknownTokenError",
    "VerificationError",
    "WorkerError",
    "__version__",
    "load",
    "load_tiktoken",
    "open_tok",
    "split",
    "train",
    "train_from_iterator",
]
