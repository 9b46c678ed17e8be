"""The one error type the core raises; the CLI turns it into a one-line message and exit code."""

from __future__ import annotations

# Exit codes shared by every command: 0 ok, 1 the checked thing failed, 2 usage or input error,
# 3 an unexpected internal error (a bug: one line on the terminal, the traceback in a log file).
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class CompareError(Exception):
    """A failure the user can act on: the message is one line naming the file, field or cause."""

    def __init__(self, message: str, *, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


def first_line(exc: BaseException, *, typed: bool = True) -> str:
    """`Type: first line of the message` - an exception as one line for an error report
    (`typed=False`: the message's first line alone, when it says what happened itself)."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    line = text.splitlines()[0]
    return f"{type(exc).__name__}: {line}" if typed else line
