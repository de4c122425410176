"""mnemo's exceptions: one hierarchy, so that callers can catch `MnemoError` for all of them.

Messages say what was wrong, with the offending value (and file, line or offset where there is
one), and what to do about it.
"""


class MnemoError(Exception):
    """Base class of every error mnemo raises on purpose."""


class ConfigError(MnemoError, ValueError):
    """An argument or option has a value mnemo cannot use."""


class InputError(MnemoError):
    """Input text or an input file cannot be read as asked (missing, unreadable, malformed)."""


class FormatError(MnemoError):
    """A tokenizer.bin, .tok or other mnemo file is damaged, truncated or of another version."""


class FingerprintError(FormatError):
    """A token file was made by a different tokenizer than the one reading it."""


class SpecialTokenError(MnemoError, ValueError):
    """Text contains a special token's string where special tokens are not allowed."""


class VerificationError(MnemoError):
    """A training run's self-check failed: the maintained pair counts are not the true ones."""


class UnknownTokenError(InputError, KeyError):
    """A token (id, bytes or name) that is not in the vocabulary; a KeyError too, as in tiktoken."""

    def __str__(self) -> str:
        # KeyError's own __str__ shows the message as a repr, in quotes.
        return str(self.args[0]) if self.args else ""


class ClusterError(MnemoError):
    """A cluster (Ray) could not be reached, or lost work past its retries (a node died)."""


class ArgumentTypeError(MnemoError, TypeError):
    """An argument of a mnemo function has the wrong Python type (a TypeError, as Python expects)."""


class WorkerError(MnemoError):
    """A worker process died (killed by a signal, the OOM killer) while working on a task."""
