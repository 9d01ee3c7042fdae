"""`ccpt rejudge RUN... --judge J --out DIR`: re-score the stored answers of any run with another judge."""

from __future__ import annotations

import click

from ccpt.cli.messages import warn
from ccpt.cli.options import (
    DIR,
    EXISTING_PATH,
    RUN_TYPES,
    data_dir_option,
    judge_arg_option,
    judge_mode_option,
    request_limits,
)


@click.command("rejudge")
@click.argument("runs", nargs=-1, required=True, type=EXISTING_PATH)
@click.option("--judge", "judge_name", required=True, metavar="MODEL", help="distilled, openai/gpt-4o, gguf/…, …")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=DIR,
    help="Directory for the re-judged Inspect logs (read them with `ccpt report DIR`). Rerun to resume.",
)
@judge_mode_option
@judge_arg_option(
    "Argument for the judge model (repeatable), e.g. base_url=URL or calibrated=false for the distilled judge."
)
@data_dir_option(
    help="CCPT dataset directory: maps the authors' files' rows to dataset ids (as `ccpt report --data-dir`)."
)
@click.option(
    "--max-connections",
    type=RUN_TYPES["max_connections"],
    help="Concurrent judge calls (at most 10,000: more than any server accepts).",
)
@request_limits("judge")
@click.option(
    "--limit",
    type=RUN_TYPES["limit"],
    default=0,
    help="Re-judge the first N instances of each task run only (every seed of each). Default: 0, all (at most "
    "1,000,000: a larger number is a slip, no split is that large).",
)
@click.option("--no-preflight", is_flag=True, help="Skip the one-request check of the judge.")
def command(
    runs, judge_name, out_dir, judge_mode, judge_args, data_dir, timeout, limit, no_preflight, **options
) -> None:
    """Re-judge the answers of Inspect runs or the authors' result files with another judge.

    Answers are kept as stored (nothing is asked of the evaluated model, nothing is re-parsed); every parsed
    answer is judged again by --judge, memoised and through Inspect's cache. DIR then holds Inspect logs that
    `ccpt report DIR` and `ccpt compare DIR` read like any run; a killed re-judge resumes when rerun. Then it
    prints Table 3 under both judges: the per-cell difference and, per column, Kendall's τ between the two
    judges' method rankings (with whether the best method stays the same).
    """
    from inspect_ai.model import get_model

    from ccpt.cli.options import key_values, optional_dataset
    from ccpt.eval import endpoints
    from ccpt.eval.judge import default_judge_mode
    from ccpt.eval.rejudge import rejudged_logs, run_rejudge
    from ccpt.eval.sweep import preflight, same_server
    from ccpt.judges import model_name
    from ccpt.report.cross_judge import cross_judge, markdown
    from ccpt.results import load_results
    from ccpt.results.identity import rejudged_variant
    from ccpt.results.inspect_logs import JUDGE_IDENTITIES, as_cells, read_logs, scoring_arguments, unreadable_line

    out = out_dir.resolve()  # apart from every input: inside or holding one, one's logs would be read as the other's
    for run in runs:
        source = run.resolve()
        relation = "is inside" if out == source or source in out.parents else "holds" if out in source.parents else ""
        if relation:
            message = f"{out_dir} {relation} the input {run}: choose a directory of its own"
            raise click.BadParameter(message, param_hint="--out")
    judge = model_name(judge_name)
    mode = judge_mode or default_judge_mode(judge)
    args = key_values(judge_args, "--judge-arg")
    server = endpoints.configured(judge, args.get("base_url"), "--judge-arg base_url")
    args |= {"base_url": server.url} if server.url else {}  # from its provider's variable too: the log records it
    if out_dir.is_dir():  # Inspect would resume a re-judge by this judge at another server as this one
        for log in read_logs([out_dir], header_only=True).logs:
            grader = (log.eval.model_roles or {}).get("grader")
            if server.url and grader is not None and str(grader.model) == judge:
                same_server(out_dir, "judge", judge, grader.base_url, server)
    if not no_preflight:
        preflight([], [judge], logprobs=mode == "expected", judge_args=args, timeout=timeout)
    dataset = optional_dataset(data_dir)
    summary = run_rejudge(
        runs,
        get_model(judge, **args),  # the grader role, with its --judge-arg
        out_dir,
        dataset=dataset,
        judge_mode=mode,
        timeout=timeout,
        limit=limit or None,
        **options,  # --max-connections, --max-retries
    )
    click.echo(f"re-judged {summary.answers} answers in {summary.groups} task runs with {judge} → {out_dir}")
    if summary.unreadable:  # named as `ccpt report` names them: a set-aside log is never re-judged unsaid
        warn(f"skipped {unreadable_line(list(summary.unreadable))}")
    if summary.finished:  # Table 3 of each original judge's runs against the same answers re-judged (Markdown)
        before = load_results(list(runs), dataset)
        judged = before["judge"].astype("string").fillna("")
        given = as_cells(scoring_arguments(judge, args))  # the re-judging judge's arguments that change its scores
        for original, logs in rejudged_logs(out_dir, judge, summary.logs).items():
            after = load_results(logs, dataset)
            judged_by = {key for key, identity in after.attrs[JUDGE_IDENTITIES].items() if identity.name == judge}
            after = after[after["judge"].isin(judged_by)]  # its rows under every identity of this judge's model
            mine = before[judged == original] if original is not None else before
            if original is not None:  # keyed as its re-judged copy is (ccpt.results.inspect_logs: REJUDGED_JUDGE)
                mine = mine.assign(variant=[rejudged_variant(v, original, given) for v in mine["variant"]])
            named = original or " + ".join(sorted(set(judged) - {""})) or "the original judge"
            # named as the report names it (its identity: "@weights", reply format), as the before column is
            renamed = " + ".join(sorted(set(after["judge"].dropna().astype(str)))) or judge
            renamed += "".join(f" [{k} {v}]" for k, v in given.items())  # A − A [--judge-arg w 2]: not A − A
            click.echo(markdown(cross_judge(mine, after, named, renamed)))
    if summary.skipped_task3:
        click.echo(f"{summary.skipped_task3} Task-3 answers were not carried over (Task 3 has no judge)")
    if not summary.finished:
        raise click.ClickException(f"some re-judge runs did not finish; rerun the same command to resume ({out_dir})")
