"""docs/cli.md, every command's ``--help`` at a fixed width, rendered from the click command tree:
``python -m ccpt.cli.reference > docs/cli.md`` (tests/test_cli_reference.py checks it is up to date).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

from ccpt.cli import _register, cli

WIDTH = 100

INTRO = """# Command-line reference

Every `ccpt` command and its options, as `ccpt COMMAND --help` prints them. This page is generated from the
commands themselves (`python -m ccpt.cli.reference > docs/cli.md`; `tests/test_cli_reference.py` fails when the
two differ). What the commands are for, with examples: the user guide, linked from the [README](../README.md).
"""


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """(the words that name it, the command) for ``command`` and every command under it, depth first."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):  # in --help's order
            if not sub.hidden:
                yield from _walk(sub, (*path, name))


def _help(command: click.Command, path: tuple[str, ...]) -> str:
    """The command's ``--help`` text at :data:`WIDTH` columns (the terminal's width plays no part)."""
    parent = None
    for name in path[:-1]:  # the parent contexts give the usage line its full command path
        parent = click.Context(click.Command(name), info_name=name, parent=parent)
    # `ccpt`'s own settings (-h, and its max_content_width: WIDTH), as `ccpt COMMAND --help` uses them.
    ctx = click.Context(command, info_name=path[-1], parent=parent, terminal_width=WIDTH, **cli.context_settings)
    return command.get_help(ctx).rstrip()


def render() -> str:
    """The whole page."""
    _register()
    commands = list(_walk(cli, ("ccpt",)))
    index = "\n".join(f"- [`{' '.join(path)}`](#{'-'.join(path)})" for path, _ in commands) + "\n"
    sections = [f"## `{' '.join(path)}`\n\n```text\n{_help(command, path)}\n```\n" for path, command in commands]
    return "\n".join([INTRO, index, *sections])


if __name__ == "__main__":
    sys.stdout.write(render())
