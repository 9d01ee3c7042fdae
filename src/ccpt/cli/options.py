"""Option types, options and argument readers shared by the commands (numbers checked by pydantic declarations)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

import click

from ccpt.schemas.base import UnitFloat
from ccpt.schemas.run import RUN_OPTIONS, JudgeMode, Seed, at_most

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset


class Declared(click.ParamType):
    """An option of a type declared with pydantic: the command line refuses exactly what the declaration does."""

    name = "value"

    def __init__(self, declared: Any) -> None:
        self.declared = declared

    @cached_property
    def adapter(self) -> Any:
        """The declaration's validator, built on first use (starting ``ccpt`` builds none)."""
        from pydantic import TypeAdapter

        return TypeAdapter(self.declared)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` typed, or click's one-line usage error in the declaration's words."""
        from pydantic import ValidationError

        from ccpt.schemas.base import _reason

        try:
            return self.adapter.validate_python(value)
        except ValidationError as exc:
            self.fail(f"{value!r} {_reason(exc.errors()[0])}", param, ctx)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """``INTEGER ≥ 1``, ``NUMBER in [0, 1]``: the kind and the range, as docs/schemas.md words them."""
        from ccpt.schemas.docs import describe

        words = describe(self.adapter.json_schema())
        kind, _, bounds = words.partition(" ")
        return f"{kind.upper()} {bounds}".strip()


# The click type of each of `ccpt run`'s options in RUN_OPTIONS (``--timeout`` is ``timeout``).
RUN_TYPES = {name: Declared(declared) for name, declared in RUN_OPTIONS.items()}
SEED = Declared(Seed)


class Existing(click.Path):
    """An input path that exists: ``kind`` "file" (a regular file: a FIFO or a device is refused before anything
    opens it), "dir", or "path" (either). A dangling link or a link loop is named as such, not as a missing path."""

    def __init__(self, kind: Literal["file", "dir", "path"]) -> None:
        super().__init__(dir_okay=kind != "file", file_okay=kind != "dir", path_type=Path)
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The path, or click's one-line usage error naming it."""
        from ccpt.errors import path_problem

        path = super().convert(value, param, ctx)
        problem = path_problem(path, directory=self.kind != "file")
        if problem and not (self.kind == "path" and problem == "not a directory"):
            self.fail(f"{path}: {problem}", param, ctx)
        return path


# The path types of the commands' file and directory options and arguments.
FILE = click.Path(dir_okay=False, path_type=Path)
DIR = click.Path(file_okay=False, path_type=Path)
EXISTING_FILE = Existing("file")
EXISTING_DIR = Existing("dir")
EXISTING_PATH = Existing("path")
UNIT_INTERVAL = Declared(UnitFloat)
# A count option: ≥ 1, and at most a million (a larger one is a slip that would run away; tighter bounds are the
# option's own, with the reason in its help).
COUNT = Declared(at_most(1_000_000))
F = TypeVar("F", bound=Callable[..., Any])


# How a judge's score is read (ccpt.eval.judge.JudgeMode), one option for every command that calls a judge.
judge_mode_option = click.option(
    "--judge-mode",
    type=click.Choice(get_args(JudgeMode)),
    help="text: the score the judge writes (paper). expected: probability-weighted score from log-probabilities "
    "(needs a provider with logprobs). Default: expected for gguf judges, else text.",
)

# The price list of `ccpt run` and `ccpt report` (ccpt.schemas.usage).
prices_option = click.option(
    "--prices",
    type=EXISTING_FILE,
    help='TOML price list for the cost column: "MODEL" = { input = $/1M tokens, output = $/1M tokens }.',
)


def defaulted(*decls: str, default: Any, **kwargs: Any) -> Callable[[F], F]:
    """A click option whose help shows its ``default``."""
    return click.option(*decls, default=default, show_default=True, **kwargs)


def request_limits(what: str) -> Callable[[F], F]:
    """``--timeout`` and ``--max-retries`` for every command that sends requests, ``what`` naming whose."""
    max_retries = defaulted(
        "--max-retries",
        default=3,
        type=RUN_TYPES["max_retries"],
        help=f"Retries per failed {what} request (0: none, the provider SDK's own retries included; at most 100: "
        "each retry waits longer).",
    )
    timeout = defaulted(
        "--timeout",
        default=120,
        type=RUN_TYPES["timeout"],
        help=f"Seconds one {what} request may take (each attempt, and the preflight request; at most 86,400, a day).",
    )
    return lambda command: timeout(max_retries(command))


def data_dir_option(
    help: str = "Directory holding the CCPT files (ccpt_*.csv, test_index.json). "
    "Default: $CCPT_DATA_DIR, else the verified download in your cache directory.",
) -> Callable[[F], F]:
    """``--data-dir``: the dataset directory option (``help`` says what the command uses it for)."""
    return click.option("--data-dir", type=DIR, help=help)


def results_dir_option(
    help: str = "Directory holding the authors' stored result files (*.csv, subfolders included). Default: "
    "$CCPT_RESULTS_DIR, else the verified copy in your cache directory, downloaded when absent.",
) -> Callable[[F], F]:
    """``--results-dir``: the stored result files' directory option."""
    return click.option("--results-dir", type=DIR, help=help)


def judge_arg_option(help: str) -> Callable[[F], F]:
    """``--judge-arg NAME=VALUE``: arguments for the judge model, read like Inspect's ``-M``."""
    return click.option("--judge-arg", "judge_args", multiple=True, metavar="NAME=VALUE", help=help)


def label_option(help: str) -> Callable[[F], F]:
    """``--label MODEL=NAME`` (repeatable): the name a model is printed under."""
    return click.option("--label", "labels", multiple=True, metavar="MODEL=NAME", help=help)


def key_values(pairs: tuple[str, ...], what: str) -> dict[str, object]:
    """NAME=VALUE pairs read the way Inspect reads ``-T``/``-M``: the value as YAML, an unquoted string with commas
    as a list (a,b → [a, b]), dashes in names as underscores."""
    import yaml

    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected NAME=VALUE, got {pair!r}", param_hint=what)
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            problem = " ".join(str(getattr(exc, "problem", None) or "not valid YAML").split())
            raise click.BadParameter(f"{pair!r}: {problem}", param_hint=what) from None
        if isinstance(value, bool) and raw.strip().lower() not in ("true", "false"):
            value = raw  # YAML 1.1 reads yes/no/on/off as true/false; a switch is spelled true or false only
        if isinstance(value, str) and "," in value:
            value = value.split(",")
        out[key.replace("-", "_")] = value
    return out


def optional_dataset(data_dir: Path | None) -> CCPTDataset | None:
    """The dataset from --data-dir / $CCPT_DATA_DIR / the cache; None when none is given and none is downloaded."""
    from ccpt.dataset import load_dataset
    from ccpt.io.download import REQUIRED_FILES, cache_dir

    cached = all((cache_dir() / name).is_file() for name in REQUIRED_FILES)
    if data_dir is None and not os.environ.get("CCPT_DATA_DIR") and not cached:
        return None  # never download implicitly just to add a Gold row
    return load_dataset(data_dir)
