"""The ``ccpt`` command line: thin wrappers over the library, one module per command group.

Every command turns a :class:`~ccpt.errors.CcptError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys

try:  # Ctrl-C while Python imports click (a command's first tenths of a second): one line, not a traceback
    import click

    from ccpt.cli.messages import say
except KeyboardInterrupt:
    sys.stderr.write("ccpt: interrupted\n")
    raise SystemExit(130) from None

from ccpt import __version__
from ccpt.errors import CcptError, Interrupted

__layer__ = "cli"  # the command: thin wrappers over every other layer (tests/test_layering.py)

# Each module defines a click command or group named ``command``; order is the order in --help.
_COMMANDS = "run data report compare agreement judge rejudge human conceptnet pipeline models".split()  # noqa: SIM905


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ccpt")
def cli() -> None:
    """ccpt — evaluate language models on Conceptual Combination with Property Type (CCPT).

    Run `ccpt COMMAND --help` for the options of each command.
    """


def _register() -> None:
    for name in _COMMANDS:
        cli.add_command(importlib.import_module(f"ccpt.cli.{name}").command)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ccpt`` script; returns the process exit code."""
    try:
        _register()  # inside the handlers: Ctrl-C while the command modules import is one line too
        cli.main(args=argv, prog_name="ccpt", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("ccpt: interrupted", err=True)
        return 130
    except click.exceptions.ClickException as exc:
        # A usage error is one line naming the bad option (click's default adds the usage block around it);
        # `ccpt` alone prints the help (click ≥ 8.2: NoArgsIsHelpError).
        if isinstance(exc, click.exceptions.UsageError) and type(exc).__name__ != "NoArgsIsHelpError":
            command = exc.ctx.command_path if exc.ctx is not None else "ccpt"
            say(f"error: {exc.format_message()} (see `{command} --help`)")
        else:
            exc.show()
        return exc.exit_code
    except Interrupted as exc:
        say(f"interrupted: {exc}; no report printed")
        return 130
    except CcptError as exc:
        say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        click.echo("ccpt: interrupted; rerun the same command to resume", err=True)
        return 130
    except Exception as exc:  # a bug, not a user error: say so in one line, full traceback on request
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):  # the disk's state, not a bug
            # Files ccpt writes name their path (ccpt.io.outputs); a write without one is to the redirected stdout.
            say(f"error: {exc.filename or 'standard output'}: cannot write ({exc.strerror})")
            return 2
        if os.environ.get("CCPT_DEBUG"):
            raise
        say(f"internal error: {type(exc).__name__}: {exc} (set CCPT_DEBUG=1 for the traceback)")
        return 1
    return 0
