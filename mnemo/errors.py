"""mnemo's exceptions: one hierarchy, so that callers can catch `MnemoError` for all of them.

Messages say what was wrong, with the offending value (and file, line or offset where there is
one), and what to do about it.

The rule that picks the class -- whose move is it?

- The user can fix it, so the class says where to look:
    ConfigError        an argument's or option's value (a ValueError): a bad vocab_size, an
                       unknown pattern, an output path that cannot be written, a flag that
                       does not go with another, ids a caller hands to a writer that do not fit;
    ArgumentTypeError  an argument's Python type (a TypeError), naming the argument;
    InputError         input text or files that cannot be read as asked: missing, unreadable,
                       not text, the wrong kind of file, token data outside the vocabulary
                       (UnknownTokenError: a token that is not in the vocabulary, also a
                       KeyError; InvalidUTF8Error: bytes that must be text, also a
                       UnicodeDecodeError -- the types tiktoken raises there);
    FormatError        a tokenizer.bin, .tok or other tool's file that is damaged, truncated or
                       of another version (FingerprintError: made by another tokenizer);
    SpecialTokenError  special-token text where the caller did not allow it.
- Neither's, but the machine's:
    WorkerError        a worker process died (a signal, the out-of-memory killer) on a task; it
                       names the process, the signal and the task, so the run can be retried.
- mnemo's own fault, which no input should cause:
    VerificationError  a self-check failed (the trainer's recount);
    anything else      a bug: it propagates as what it is (AssertionError, IndexError, ...),
                       never re-labelled as one of the user's errors above, so that it is
                       reported with its traceback instead of sending the user to their input.
The command line prints a MnemoError as one `mnemo: error:` line; tests/test_cli_errors.py checks
each failure path's class against this rule.
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


class InvalidUTF8Error(InputError, UnicodeDecodeError):
    """Bytes that must be UTF-8 text are not; a UnicodeDecodeError too, as tiktoken raises there."""

    def __init__(self, message: str, data: bytes, start: int, end: int) -> None:
        UnicodeDecodeError.__init__(self, "utf-8", data, start, end, message)

    def __str__(self) -> str:
        # UnicodeDecodeError's own __str__ is "'utf-8' codec can't decode ...": the message says more.
        return self.reason


class ClusterError(MnemoError):
    """A cluster (Ray) could not be reached, or lost work past its retries (a node died)."""


class ArgumentTypeError(MnemoError, TypeError):
    """An argument of a mnemo function has the wrong Python type (a TypeError, as Python expects)."""


class WorkerError(MnemoError):
    """A worker process died (killed by a signal, the OOM killer) while working on a task."""
