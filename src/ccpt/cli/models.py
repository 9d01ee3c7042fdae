"""`ccpt models`: the embedded model files (GGUF weights, the distilled judge and its base encoders), where they
are, whether they are installed, and the provider string that uses them (:mod:`ccpt.io.embedded`)."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from ccpt.io.embedded import MISSING, model_files


@click.command("models")
@click.option(
    "--verify", is_flag=True, help="Hash every present file no earlier check vouches for (the GGUFs: a minute or so)."
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(verify: bool, fmt: str) -> None:
    """List the embedded model files: path, size, status (present / assembled / missing), sha256, and how to use them.

    Split files (the GGUFs, the MPNet encoder) are assembled into the user cache on first use ($CCPT_CACHE_DIR or
    the platform's cache dir); their path is where the assembled file is, or will be.
    """
    files = model_files(verify=verify)
    if fmt == "json":
        click.echo(json.dumps([asdict(f) | {"path": str(f.path)} for f in files], indent=2))
        return
    for f in files:
        size = "size ?" if not f.size else f"{f.size / 1e6:,.0f} MB" if f.size >= 1e6 else f"{f.size / 1e3:,.1f} kB"
        sha = f", sha256 {f.sha256}" if f.sha256 else ""
        click.echo(f"{f.name} ({f.kind}) — use: {f.use}")
        click.echo(f"  {f.status}{sha}, {size}: {f.path}")
        if f.status == MISSING:
            click.echo(f"  to install: {f.hint}")
