"""What ``ccpt`` writes to stderr besides its output: each error, warning and note on one line, whatever text it
quotes (a model name, a path or a model's reply may hold line breaks)."""

from __future__ import annotations

import click


def one_line(text: str) -> str:
    """``text`` with line breaks, tabs and other unprintable characters written as escapes (``\\n``), so a quoted
    name cannot split a message into lines that read as other messages."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def say(text: str) -> None:
    """One line ``ccpt: TEXT`` on stderr."""
    click.echo(f"ccpt: {one_line(text)}", err=True)


def warn(text: str) -> None:
    """One line ``ccpt: warning: TEXT`` on stderr."""
    say(f"warning: {text}")
