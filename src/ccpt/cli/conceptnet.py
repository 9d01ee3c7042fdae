"""`ccpt conceptnet …`: index a ConceptNet assertions dump and query concept neighbourhoods."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.cli.data import format_option
from ccpt.cli.options import COUNT, FILE, data_dir_option, defaulted
from ccpt.graph import build_index, default_index_path
from ccpt.io.jsonout import dumps
from ccpt.io.sources import GRAPH_CACHE_NAME, resolve_graph


@click.group("conceptnet")
def command() -> None:
    """Build and query the concept graph used by Spreading Activation (ConceptNet 5.x)."""


@command.command("index")
@click.argument("dump", type=FILE)
@click.option(
    "--db",
    type=FILE,
    help="Index file to write. Default: $CCPT_CONCEPTNET_DB, else conceptnet.sqlite in the user data dir.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing index.")
def index_cmd(dump: Path, db: Path | None, force: bool) -> None:
    """Index DUMP (conceptnet-assertions-5.7.0.csv.gz) into SQLite, English edges only.

    Streams the file (flat memory; about 34M lines for 5.7). Malformed lines are counted and reported.
    """
    target = db or default_index_path()
    click.echo(f"indexing {dump} into {target} …", err=True)
    stats = build_index(
        dump, target, force=force, progress=lambda lines: click.echo(f"  {lines:,} lines read", err=True)
    )
    click.echo(
        f"indexed {stats.lines:,} lines in {stats.seconds:.0f} s: {stats.kept_edges:,} English edges, "
        f"{stats.english_concepts:,} English concepts, {stats.malformed:,} malformed lines skipped → {target}"
    )


@command.command("neighbours")
@click.argument("concept")
@click.option("--db", type=FILE, help="A built index.")
@click.option("--cache", type=FILE, help=f"A neighbourhood cache like {GRAPH_CACHE_NAME} (or an index file).")
@data_dir_option(help=f"Dataset directory whose {GRAPH_CACHE_NAME} is used when neither --db nor --cache is given.")
@defaulted("-k", "k", type=COUNT, default=10, help="How many (at most 1,000,000: each is one line printed).")
@format_option
def neighbours_cmd(concept: str, db: Path | None, cache: Path | None, data_dir: Path | None, k: int, fmt: str) -> None:
    """Print CONCEPT's strongest English neighbours, as Spreading Activation's Activate(c) sees them."""
    graph = resolve_graph(db, cache, data_dir)
    found = graph.neighbours(concept, k)
    if fmt == "json":
        click.echo(dumps({"concept": concept, "graph": graph.name, "neighbours": list(found)}, indent=None))
        return
    if not found:
        click.echo(f"{concept}: no neighbours in {graph.name}", err=True)
        return
    click.echo("\n".join(found))
