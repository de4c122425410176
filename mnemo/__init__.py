"""mnemo: a fast, verifiable byte-level BPE tokenizer.

Re-exports only; each name lives in the module that owns it.
"""

from mnemo.errors import (
    ArgumentTypeError,
    ConfigError,
    FingerprintError,
    FormatError,
    InputError,
    MnemoError,
    SpecialTokenError,
    VerificationError,
)
from mnemo.formats import open_tok
from mnemo.pretokenize import split
from mnemo.tokenizer import Tokenizer
from mnemo.training import train

__version__ = "0.1.0"

__all__ = [
    "ArgumentTypeError",
    "ConfigError",
    "FingerprintError",
    "FormatError",
    "InputError",
    "MnemoError",
    "SpecialTokenError",
    "Tokenizer",
    "VerificationError",
    "__version__",
    "open_tok",
    "split",
    "train",
]
