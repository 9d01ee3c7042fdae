"""`ccpt human serve` over real HTTP: access, input checks, saving, restart, export → the existing importers."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest
from human_app_helpers import HOSTILE, Client, rating_study

from ccpt.errors import DataError
from ccpt.human.app.assign import assign
from ccpt.human.app.server import Server, is_loopback, prepare
from ccpt.human.app.studies import load_study
from ccpt.human.sheets import export_solver_sheet
from ccpt.pipeline.annotation import export_tasks
from ccpt.pipeline.candidates import CANDIDATES
from ccpt.pipeline.manifest import write_jsonl


def _links(server: Server) -> dict[str, str]:
    return dict(server.links())


def _answer_all(client: Client, link: str, answer_for) -> int:
    """Answer every item of a link with ``answer_for(page_text)``, the way the form would; returns how many."""
    n = 0
    page = client.get(link)
    while "/item/" in page.url:
        fields = answer_for(page.text)
        reply = client.post(page.url, fields, csrf_from=page.url)
        assert reply.status == 200, reply.text
        page, n = reply, n + 1
    return n


def test_assignment_overlap_follows_the_paper() -> None:
    """3 annotators per emergent/canceled HIT, 1 per component HIT (from hits.csv), everyone on unbounded items."""
    from ccpt.human.app.studies import Item

    hits = [Item("annotation", f"h{k}", "emergent", {}, 3) for k in range(4)]
    hits += [Item("annotation", f"c{k}", "emergent", {}, 1, component=True) for k in range(5)]
    pairs = [Item("rating", f"p{k}", "rating", {}, None) for k in range(3)]
    per_person = assign(hits + pairs, 5)
    counts = {i.key: sum(i in mine for mine in per_person) for i in hits + pairs}
    assert all(counts[f"h{k}"] == 3 for k in range(4)) and all(counts[f"c{k}"] == 1 for k in range(5))
    assert all(counts[f"p{k}"] == 5 for k in range(3))
    loads = [len(mine) - 3 for mine in per_person]  # the shared pairs aside, HITs are spread evenly
    assert sum(loads) == 17 and max(loads) - min(loads) <= 1
    with pytest.raises(DataError, match="needs 3 annotators, only 2"):
        assign(hits, 2)


def test_links_are_secret_and_private(tmp_path: Path, dataset) -> None:
    """A link sees only its own items; unknown or tampered links, and other annotators' items, are 404."""
    export_solver_sheet(dataset, "pi_emergent", tmp_path, n=3, seed=1)
    prepared = prepare(tmp_path, ["ann", "bob"])
    with Server(prepared) as server:
        links = _links(server)
        ann, bob = Client(), Client()
        secret = "zebra-quartz-unique-answer"
        assert _answer_all(bob, links["bob"], lambda _: {"answer": secret}) == 3
        pages = [ann.get(links["ann"] + f"item/{k}") for k in (1, 2, 3)] + [ann.get(links["ann"] + "review")]
        assert all(p.status == 200 and secret not in p.text for p in pages)
        assert ann.get(links["ann"] + "item/4").status == 404  # past the end of ann's list
        token = links["bob"].rstrip("/").rsplit("/", 1)[1]
        tampered = links["bob"].replace(token, token[:-1] + ("A" if token[-1] != "A" else "B"))
        for url in (tampered, tampered + "item/1", server.url("/a/nope/"), server.url(f"/admin/{token}/")):
            assert ann.get(url).status == 404
        # Writing with a tampered link (even with a valid CSRF session) is a 404 too, and changes nothing.
        reply = ann.post(tampered + "item/1", {"answer": "overwritten"}, csrf_from=links["ann"] + "item/1")
        assert reply.status == 404
        assert (
            secret in bob.get(links["bob"] + "review").text
            and "overwritten" not in bob.get(links["bob"] + "review").text
        )


def test_gold_answers_and_judge_scores_never_reach_a_page(tmp_path: Path, dataset, reference_dir: Path) -> None:
    for task in ("pi_emergent", "pi_canceled", "npc_emergent"):
        export_solver_sheet(dataset, task, tmp_path, n=4, seed=2)
    rating_study(tmp_path, reference_dir, dataset)
    prepared = prepare(tmp_path, ["a1", "a2"])
    key = pd.read_csv(tmp_path / "key.csv", dtype=str, keep_default_na=False)
    judge_scores = {s for s in key["llm_judge"] if len(s) > 4}  # e.g. 0.8888888888888888
    items = {i.id: i for task in ("pi_emergent", "pi_canceled", "npc_emergent") for i in dataset.test(task)}
    with Server(prepared) as server:
        links = _links(server)
        client = Client()
        bodies = []
        for name in ("a1", "a2"):
            total = len(prepared.study.items)  # everyone answers every item here
            bodies += [client.get(links[name] + f"item/{k}") for k in range(1, total + 1)]
            bodies.append(client.get(links[name] + "review"))
        bodies.append(client.get(links["admin"]))
        bodies.append(client.post(links["admin"] + "export", {}, csrf_from=links["admin"]))
        bodies.append(client.get(server.url("/static/app.css")))
        text = "\n".join(b.text for b in bodies)
        assert all(b.status == 200 for b in bodies)
        assert not [s for s in judge_scores if s in text] and "llm_judge" not in text
        checked = 0
        for item_id, sheet_item in ((i.key, i) for i in prepared.study.items if i.study == "solver"):
            gold = items[item_id]
            secret = gold.combination if sheet_item.kind == "npc_emergent" else gold.property
            if secret.lower() in sheet_item.fields["question"].lower():
                continue  # a gold string that is also part of the shown question cannot be told apart
            assert f"&#39;{secret}&#39;" not in text and f"“{secret}”" not in text and f">{secret}<" not in text
            assert secret not in text.replace(gold.head, ""), (item_id, secret)
            checked += 1
        assert checked >= 8


def test_hostile_text_is_escaped(tmp_path: Path, dataset, reference_dir: Path) -> None:
    rating_study(tmp_path, reference_dir, dataset)
    prepared = prepare(tmp_path, ["r1"])
    with Server(prepared) as server:
        link = _links(server)["r1"]
        client = Client()
        pages = [client.get(link + f"item/{k}").text for k in range(1, len(prepared.study.items) + 1)]
        text = "\n".join(pages)
        assert "<script" not in text and "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in text
    # The same on the annotation forms, whose *emphasis* becomes italics: only the form's own, never markup.
    work = tmp_path / "work"
    write_jsonl(work / CANDIDATES, [{"type": "component", "head": "dog", "modifier": "wet", "combination": HOSTILE,
                                     "property": "<img src=x onerror=alert(1)>*x*"}])  # fmt: skip
    export_tasks(work)
    with Server(prepare(work, ["a"])) as server:
        page = Client().get(dict(server.links())["a"]).text
        assert "<script" not in page and "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;<em>x</em>" in page
        assert "<em>disappears</em>" not in page and "<em>toxic</em>" in page  # Figure 5's form, with its emphasis


def test_input_checks_refuse_with_a_message(tmp_path: Path, dataset, reference_dir: Path) -> None:
    rating_study(tmp_path, reference_dir, dataset)
    export_solver_sheet(dataset, "npc_emergent", tmp_path, n=1, seed=0)
    prepared = prepare(tmp_path, ["r1"])
    with Server(prepared) as server:
        link = _links(server)["r1"]
        client = Client()
        solver, rating = link + "item/1", link + "item/2"
        assert "Modifier you added" in client.get(solver).text
        reply = client.post(solver, {"answer": "a wet dog", "answer_modifier": "  "}, csrf_from=solver)
        assert reply.status == 400 and "Please fill in the modifier you added." in reply.text
        assert 'value="a wet dog"' in reply.text  # what was typed is kept on the page
        for bad in ("11", "0", "7.5", "", "seven", "٣"):
            reply = client.post(rating, {"rating": bad}, csrf_from=rating)
            assert reply.status == 400 and "The rating must be a whole number from 1 to 10." in reply.text
        assert client.post(rating, {"rating": "x" * 20_000}, csrf_from=rating).status == 413
        page = client.get(rating).text
        token = page.split('name="csrf" value="')[1].split('"')[0]
        as_json = client.request(
            rating, json.dumps({"csrf": token, "rating": 5}).encode(), {"Content-Type": "application/json"}
        )
        assert as_json.status == 415 and "Only form posts are accepted here." in as_json.text
        binary = client.request(rating, b"csrf=" + token.encode() + b"&rating=\xff\xfe",
                                {"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        assert binary.status == 400 and "could not be read as text" in binary.text
        # CSRF: no token, a wrong token, or a post from another site are all refused, and nothing is saved.
        assert client.post(rating, {"rating": "5"}).status == 403
        assert client.post(rating, {"rating": "5", "csrf": "forged"}).status == 403
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"}
        cross = client.request(rating, f"csrf={token}&rating=5".encode(), headers)
        assert cross.status == 403 and "another site" in cross.text
        fresh = Client()  # another browser: its own session, so this page's token is not valid there
        assert fresh.post(rating, {"rating": "5", "csrf": token}).status == 403
        assert prepared.store.answers(prepared.store.annotators()[0].id) == {}


def test_concurrent_annotators_restart_and_cli_export(tmp_path: Path, dataset, reference_dir: Path, capsys) -> None:
    """Four annotators post at once (WAL: nobody blocks); a restart keeps links and answers; --export works."""
    from ccpt.cli import main

    rating_study(tmp_path, reference_dir, dataset)
    assert main(["human", "serve", str(tmp_path), "--export"]) == 2
    assert "no study database in" in capsys.readouterr().err
    assert main(["human", "serve", str(tmp_path)]) == 2
    assert "a new study needs its annotators" in capsys.readouterr().err
    with pytest.raises(DataError, match="needs 5 annotators, only 4"):
        prepare(tmp_path, [f"p{k}" for k in range(4)], rating_overlap=5)
    assert not (tmp_path / "human.sqlite").exists()  # refused setups write nothing
    prepared = prepare(tmp_path, [f"p{k}" for k in range(4)])
    n_items = len(prepared.study.items)
    with Server(prepared) as server:
        links = _links(server)
        errors: list[str] = []

        def work(name: str, value: int) -> None:
            try:
                assert _answer_all(Client(), links[name], lambda _: {"rating": str(value)}) == n_items
            except AssertionError as exc:  # pragma: no cover - reported below
                errors.append(f"{name}: {exc}")

        threads = [threading.Thread(target=work, args=(f"p{k}", k + 3)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
    # Restart: same links, every answer there; a different annotator list is refused.
    again = prepare(tmp_path, None)
    assert again.links == prepared.links and again.admin_token == prepared.admin_token
    with pytest.raises(DataError, match="already has annotators"):
        prepare(tmp_path, ["someone", "else"])
    with Server(again) as restarted:  # the old link, on the restarted server, finds every answer in place
        resumed = Client().get(dict(restarted.links())["p0"])
        assert resumed.url.endswith("/review") and "Every item is answered" in resumed.text
    assert main(["human", "serve", str(tmp_path), "--export"]) == 0
    out = capsys.readouterr().out
    assert f"rating: {4 * n_items} of {4 * n_items} assignments answered" in out
    for k in range(4):
        sheet = pd.read_csv(tmp_path / "export" / f"rater_{k + 1}.csv")
        assert list(sheet.columns) == ["pair_id", "concept", "property", "rater", "rating"]
        assert (sheet["rating"] == k + 3).all() and (sheet["rater"] == f"p{k}").all() and len(sheet) == n_items


def _candidates(workdir: Path) -> None:
    rows = [
        {"type": t, "head": h, "modifier": m, "combination": c, "property": p, "sentence": s, "doc_id": "d1",
         "property_source": ""}
        for t, h, m, c, p, s in [
            ("emergent", "tiger", "caged", "caged tiger", "pace restlessly", "It paced like a caged tiger."),
            ("emergent", "dog", "wet", "wet dog", "smelly", "A wet dog came in."),
            ("emergent", "car", "red", "red car", "fast", "The red car left."),
            ("canceled", "apple", "peeled", "peeled apple", "red", "She peeled the apple."),
            ("component", "apple", "red", "red apple", "round", "A red apple fell."),
        ]
    ]  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    write_jsonl(workdir / CANDIDATES, rows)


def test_annotation_export_gives_kappa_through_annotate_import(tmp_path: Path, capsys) -> None:
    """Three annotators label the HITs over HTTP; `ccpt pipeline annotate-import` on the export gives the Fleiss κ
    of the hand-chosen labels (the same numbers as test_pipeline's hand computation: κ = 0.25)."""
    from ccpt.cli import main

    work = tmp_path / "work"
    _candidates(work)
    export_tasks(work)
    study = load_study(work)
    assert [i.overlap for i in study.items] == [3, 3, 3, 3, 1] and study.items[-1].component
    prepared = prepare(work, ["w0", "w1", "w2"])
    labels = {  # per HIT, per annotator: emergent form (E, E, E), (E, E, C), (C, O, O)
        "emergent-00001": ["emergent"] * 3,
        "emergent-00002": ["emergent", "emergent", "component"],
        "emergent-00003": ["component", "others", "others"],
        "canceled-00001": ["canceled", "canceled", "others"],
        "component-00001": ["component"],
    }
    with Server(prepared) as server:
        links = _links(server)
        for k, name in enumerate(("w0", "w1", "w2")):
            client = Client()
            mine = [a.item for a in prepared.store.assignments(prepared.store.annotators()[k].id)]
            page = client.get(links[name])
            for hit in mine:
                assert page.url.endswith(f"/item/{mine.index(hit) + 1}")
                who = sum(
                    hit in [a.item for a in prepared.store.assignments(a.id)] for a in prepared.store.annotators()[:k]
                )
                fields = {
                    "label": labels[hit][who],
                    "root_relevance": "5",
                    "modifier_relevance": str(k + 1),
                    "combination_relevance": "3",
                    **({"toxic": "on"} if (hit, k) == ("emergent-00002", 1) else {}),
                }
                if hit.startswith("component"):
                    assert "Q3. Which concepts have the property" in page.text
                    reply = client.post(page.url, fields, csrf_from=page.url)
                    assert reply.status == 400 and "Please choose an answer to Q3." in reply.text
                    fields["source"] = "root"
                page = client.post(page.url, fields, csrf_from=page.url)
                assert page.status == 200
            assert page.url.endswith("/review")
            token = page.text.split('name="csrf" value="')[1].split('"')[0]
            assert client.post(links[name] + "submit", {"csrf": token}).status == 200
            assert "submitted" in client.get(links[name]).text
            late = client.post(links[name] + "item/1", {"label": "others", "csrf": token})
            assert late.status == 409 and "can no longer be changed" in late.text  # submitted answers are final
        admin = Client()
        reply = admin.post(links["admin"] + "export", {}, csrf_from=links["admin"])
        assert reply.status == 200 and "answers.csv" in reply.text
    answers = tmp_path / "work" / "export" / "answers.csv"
    assert main(["pipeline", "annotate-import", str(answers), "--workdir", str(work)]) == 0
    capsys.readouterr()
    report = json.loads((work / "dataset" / "annotation_report.json").read_text(encoding="utf-8"))
    assert report["answers"] == 13 and report["fleiss_kappa"]["emergent"]["kappa"] == pytest.approx(0.25)
    assert report["rows"]["ccpt_emergent"] == 2 and report["rows"]["ccpt_canceled"] == 1
    assert report["rows"]["ccpt_component"] == 1
    emergent = pd.read_csv(work / "dataset" / "ccpt_emergent.csv")
    assert emergent.loc[1, "meta.human_labels"] == "(emergent, emergent, component)"
    assert emergent.loc[1, "meta.toxicity"] and not emergent.loc[0, "meta.toxicity"]
    assert pd.read_csv(work / "dataset" / "ccpt_component.csv").loc[0, "meta.property_source"] == "root"


def test_a_study_whose_sheets_were_exported_again_under_the_same_ids_is_refused(
    tmp_path: Path, reference_dir: Path, dataset
) -> None:
    """Seventh hostile round: sheets exported again into a started study (another run, the same number of pairs)
    keep the ids p00000, … and every stored rating counted for another pair."""
    from ccpt.human.sheets import export_rating_sheets
    from ccpt.results import load_results

    rating_study(tmp_path, reference_dir, dataset)
    prepare(tmp_path, ["a", "b"])
    assert prepare(tmp_path, None).links  # the same sheets: the study resumes
    frame = load_results([reference_dir / "pi_emergent_gpt-4o_naive.csv"], dataset)
    export_rating_sheets(frame[frame["instance"].isin(sorted(frame["instance"].unique())[-4:])], tmp_path, n=4)
    with pytest.raises(DataError, match="the sheets show other items than when the study started, under the same"):
        prepare(tmp_path, None)


def test_cli_serve_prints_links_warns_off_loopback_and_refuses_bad_options(tmp_path: Path, dataset, capsys) -> None:
    """The real `ccpt human serve` process: links printed, the app answering on 127.0.0.1, a warning for --host off
    loopback; bad options are one line and exit 2."""
    import os
    import re
    import subprocess
    import sys

    from ccpt.cli import main

    export_solver_sheet(dataset, "pi_emergent", tmp_path, n=2, seed=0)
    names = tmp_path / "names.txt"
    names.write_text("Ada\n\n# a comment\nBen\n", encoding="utf-8")
    assert main(["human", "serve", str(tmp_path), "--annotators", "2", "--names", str(names)]) == 2
    assert "either --annotators or --names" in capsys.readouterr().err
    (tmp_path / "dupes.txt").write_text("Ada\nAda\n", encoding="utf-8")
    assert main(["human", "serve", str(tmp_path), "--names", str(tmp_path / "dupes.txt")]) == 2
    assert "all distinct" in capsys.readouterr().err
    assert main(["human", "serve", str(tmp_path / "missing"), "--annotators", "1"]) == 2
    assert "study directory not found" in capsys.readouterr().err
    # --host off loopback warns; 192.0.2.1 (TEST-NET-1) is no address of this machine, so nothing is exposed.
    assert main(["human", "serve", str(tmp_path), "--names", str(names), "--host", "192.0.2.1", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "warning: listening on 192.0.2.1: anyone on this network" in err and "cannot listen on 192.0.2.1" in err
    assert [h for h in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "192.168.1.5", "::") if is_loopback(h)] == [
        "127.0.0.1",
        "::1",
        "localhost",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"), *sys.path])}
    command = [sys.executable, "-m", "ccpt.cli", "human", "serve", str(tmp_path), "--names", str(names)]
    proc = subprocess.Popen(
        [*command, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines = [proc.stdout.readline().strip() for _ in range(3)]
        links = dict(line.split(": ", 1) for line in lines)
        assert set(links) == {"Ada", "Ben", "admin"}
        assert all(re.fullmatch(r"http://127\.0\.0\.1:\d+/(a|admin)/[\w-]{32}/", link) for link in links.values())
        page = Client().get(links["Ben"])
        assert page.status == 200 and page.url.endswith("/item/1") and "Ben" in page.text
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "warning" not in err  # the default host is loopback: no warning


def test_formula_like_answers_are_exported_neutralised_and_imported_unchanged(tmp_path: Path, dataset) -> None:
    """A typed answer a spreadsheet would run (``=HYPERLINK(…)``) is written with a leading apostrophe in the
    export, and the solver importer reads back exactly what was typed."""
    from ccpt.human.app.export import export_answers
    from ccpt.human.app.store import DB_NAME, Store
    from ccpt.human.sheets import import_solver_sheets

    typed = '=HYPERLINK("http://x","y")'
    export_solver_sheet(dataset, "pi_emergent", tmp_path, n=2, seed=1)
    prepared = prepare(tmp_path, ["ann"])
    with Server(prepared) as server:
        assert _answer_all(Client(), _links(server)["ann"], lambda _: {"answer": typed}) == 2
    result = export_answers(prepared.study, Store(tmp_path / DB_NAME), tmp_path / "export")
    sheet = next(f for f in result.files if f.name == "pi_emergent_answers.csv")
    raw = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    assert (raw["answer"] == "'" + typed).all()
    assert set(import_solver_sheets([sheet], dataset)["answer_raw"]) == {typed}


def test_a_busy_database_is_a_503_with_a_retry_hint_and_nothing_is_lost(
    tmp_path: Path, dataset, reference_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3
    import time

    from ccpt.human.app import store as store_module

    monkeypatch.setattr(store_module, "BUSY_SECONDS", 0.5)  # the wait before answering 503 (3 s when served)
    rating_study(tmp_path, reference_dir, dataset)
    prepared = prepare(tmp_path, ["r1"])
    with Server(prepared) as server:
        link = _links(server)["r1"]
        client = Client()
        item = link + "item/1"
        page = client.get(item).text
        token = page.split('name="csrf" value="')[1].split('"')[0]
        locker = sqlite3.connect(prepared.store.path, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
        try:
            started = time.monotonic()
            reply = client.post(item, {"rating": "5", "csrf": token})
            elapsed = time.monotonic() - started
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert reply.status == 503 and "try again in a few seconds" in reply.text
        assert elapsed < 10  # not the 30 s (then a 500) of a long busy timeout
        assert client.post(item, {"rating": "5", "csrf": token}).status in (200, 303)  # the retry is saved
        assert len(prepared.store.answers(prepared.store.annotators()[0].id)) == 1


def test_a_stalled_post_is_cut_off(tmp_path: Path, dataset, reference_dir: Path, monkeypatch) -> None:
    import socket
    import time

    from ccpt.human.app import app as app_module

    monkeypatch.setattr(app_module, "BODY_SECONDS", 1.0)
    rating_study(tmp_path, reference_dir, dataset)
    prepared = prepare(tmp_path, ["r1"])
    with Server(prepared) as server:
        path = _links(server)["r1"].split(str(server.port), 1)[1] + "item/1"
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
            conn.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nrating=5".encode()
            )  # 8 of the 100 bytes announced, then nothing
            started = time.monotonic()
            reply = conn.recv(4096).decode("latin-1")
            assert reply.startswith("HTTP/1.1 408") and time.monotonic() - started < 10


def test_stalled_request_headers_are_cut_off(tmp_path: Path, dataset, reference_dir: Path, monkeypatch) -> None:
    """Connections that never finish their headers are closed, so they cannot hold every slot (issue 22)."""
    import socket
    import time

    from ccpt.human.app import server as server_module

    monkeypatch.setattr(server_module, "HEADER_SECONDS", 1.0)
    rating_study(tmp_path, reference_dir, dataset)
    prepared = prepare(tmp_path, ["r1"])
    with Server(prepared) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
            conn.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            started = time.monotonic()
            assert conn.recv(4096) == b""  # closed by the server
            assert time.monotonic() - started < 10
        assert Client().get(_links(server)["r1"]).status == 200  # a well-behaved request is served as before


def test_a_corrupt_study_database_and_an_empty_host_are_one_line(tmp_path: Path, dataset, capsys) -> None:
    from ccpt.cli import main

    export_solver_sheet(dataset, "pi_emergent", tmp_path, n=2, seed=0)
    (tmp_path / "human.sqlite").write_bytes(b"this is not a database" * 100)
    assert main(["human", "serve", str(tmp_path), "--export"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "human.sqlite: not a readable study database" in err[0]
    (tmp_path / "human.sqlite").unlink()
    import sqlite3

    # Another program's database (a table of its own; one of ours with other columns) is named, never added to.
    for table in ("x(a)", "annotators(a)"):
        other = sqlite3.connect(tmp_path / "human.sqlite")
        other.execute(f"CREATE TABLE {table}")
        other.commit()
        other.close()
        assert main(["human", "serve", str(tmp_path), "--annotators", "2", "--port", "0"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "human.sqlite: not a ccpt study database" in err[0], err
        tables = sqlite3.connect(tmp_path / "human.sqlite").execute("SELECT name FROM sqlite_master").fetchall()
        assert tables == [(table.split("(")[0],)]
        (tmp_path / "human.sqlite").unlink()
    for host in ("", "  "):
        assert main(["human", "serve", str(tmp_path), "--annotators", "1", "--host", host, "--port", "0"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--host is empty" in err[0] and "0.0.0.0" in err[0]
    assert not (tmp_path / "human.sqlite").exists()  # refused before the study was created


def test_the_apps_sheets_are_checked_by_their_schema(tmp_path: Path, dataset) -> None:
    """The study sheets were parsed by hand: a repeated item id showed one question twice, and `assignments = 0`
    gave a HIT no annotator. Each is now one line naming the file, row and column (docs/schemas.md)."""
    from ccpt.errors import DataError
    from ccpt.human.app.studies import load_study
    from ccpt.human.sheets import export_solver_sheet

    csv_path, _ = export_solver_sheet(dataset, "pi_emergent", tmp_path, n=3, seed=0)
    assert csv_path.name == "pi_emergent_sheet.csv" and len(load_study(tmp_path).items) == 3
    import pandas as pd

    sheet = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    pd.concat([sheet, sheet.iloc[:1]]).to_csv(csv_path, index=False)  # the first item again
    with pytest.raises(DataError, match=r"pi_emergent_sheet\.csv: row 3 repeats row 0 \(id = "):
        load_study(tmp_path)
    csv_path.unlink()
    hits = tmp_path / "hits.csv"
    header = "hit_id,form,candidate_type,assignments,root,modifier,combination,property\n"
    hits.write_text(header + "e-1,emergent,emergent,0,dog,rain,a dog in the rain,wet\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"hits\.csv: row 0, column 'assignments': should be greater than or equal"):
        load_study(tmp_path)
    hits.write_text(header + "e-1,emergnt,emergent,3,dog,rain,a dog in the rain,wet\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"hits\.csv: row 0, column 'form': should be 'emergent' or 'canceled'"):
        load_study(tmp_path)
