"""The `mnemo` command.  Plain Python: it parses arguments, calls the library and prints.

One module per command (or pair of commands): `train`, `tokenize`, `show` (tokshow, info),
`convert`, `evaluate` (inspect, eval), `pretrain` (pretrain, demo).  Each holds the command's
`cmd_<name>(args) -> int`, its subparser (`add_<name>(sub)`, put together by `parser`) and the
check of its output paths; `common` holds what they share, `options` the shared options.
Long work shows progress (tqdm) on a terminal and stays quiet when piped; every command ends
with a one-line summary on stdout.  This module is `main`: signals, the one error line and the
exit status.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from mnemo.cli.common import check_paths
from mnemo.cli.parser import build_parser, check_option_spelling, ray_argv
from mnemo.errors import MnemoError
from mnemo.progress import PhaseProgress

__all__ = ["PhaseProgress", "build_parser", "check_paths", "main"]


def _unblock_dropping_pending(saved_mask: set[int | signal.Signals]) -> None:
    """Put back the signal mask main() started with (main may run inside another program, a
    test), dropping a Ctrl-C or SIGTERM that arrived while blocked: the run it came too late for
    has finished.  Ignored while unblocked, a pending signal is discarded."""
    if threading.current_thread() is not threading.main_thread():
        return
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in handlers:
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
    for s, h in handlers.items():
        signal.signal(s, h)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that `with` blocks (the .tok writer) clean up."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's own flush at exit does not
    fail a second time on what is still buffered (Python's advice for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        # Ctrl-C interrupts even when this process was started with SIGINT ignored (as a shell
        # does for background jobs), so that an interrupted run always cleans up after itself.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    parser = build_parser()
    given = ray_argv(sys.argv[1:] if argv is None else argv)
    check_option_spelling(parser, given)
    args = parser.parse_args(given)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        check_paths(args)
        code = handler(args)
        sys.stdout.flush()  # here, where a full disk is an error line, not a message at exit
        return code
    except MnemoError as exc:
        print(f"mnemo: error: {exc}", file=sys.stderr)
        return 1
    except _Terminated:
        print("mnemo: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as exc:
        # The last resort for what the environment does to a run the checks let through (a full
        # disk, a file removed mid-run): name the file rather than print a traceback.
        if exc.filename is not None:
            print(f"mnemo: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        else:  # a write to an open file: an output being written, or standard output
            _silence_stdout()
            print(f"mnemo: error: cannot write the output or standard output ({exc.strerror or exc})", file=sys.stderr)
        return 1
    finally:
        if argv is None and threading.current_thread() is threading.main_thread():
            # The program itself (the `mnemo` script, `python -m mnemo`): it ends now.  Unblocked,
            # a Ctrl-C or SIGTERM arriving between here and the workers' shutdown at exit raised
            # KeyboardInterrupt inside that atexit function and printed a traceback; blocked, it
            # is dropped when the process ends, with main's exit status.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        else:
            _unblock_dropping_pending(saved_mask)
