"""The web app: Starlette routes over a :class:`Study` and its :class:`Store`, pages rendered on the server.

``/a/<token>/`` for an annotator (resumes at the first unanswered item), ``/admin/<token>/`` for progress and the
export; an unknown token is a 404. Plain HTML forms (no script), each POST carrying the session's CSRF token
(double-submit cookie, SameSite=Strict). Pages never show a gold answer, another annotator's answer or a judge score.
"""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ccpt.human.app.export import ExportResult, export_answers
from ccpt.human.app.store import Annotator, Assignment, Busy, Store
from ccpt.human.app.studies import (
    ANNOTATION,
    RATING_SCALE,
    RELEVANCE_LABELS,
    STUDY_TITLES,
    AnswerError,
    Item,
    Study,
    annotation_form,
    check_answer,
)
from ccpt.spec import TYPE_LABELS

MAX_BODY = 16 * 1024  # bytes of one form post: a handful of short fields
MAX_FIELDS = 32
BODY_SECONDS = 10.0  # a form post whose body has not arrived by then is refused (a stalled client holds nothing)
RETRY_AFTER = "5"  # seconds, sent with a 503 when the database is busy
CSRF_COOKIE = "ccpt_csrf"
SUBMITTED_FINAL = "Your answers are already submitted and can no longer be changed."
BUSY = "The study is busy saving other answers. Nothing was lost: please try again in a few seconds."
CSS_PATH = Path(__file__).with_name("templates") / "app.css"
SECURITY_HEADERS = {
    # The link token is in the URL: never leak it through a Referer, a cache or a frame.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
}


def emphasis(text: str) -> Markup:
    """The forms' ``*word*`` emphasis as italics; the text is escaped first, so nothing else becomes markup."""
    return Markup(re.sub(r"\*([^*\n]+)\*", r"<em>\1</em>", str(escape(text))))


class Refused(HTTPException):
    """A request refused with a message page (its ``detail``)."""


@dataclass(frozen=True)
class Session:
    """The annotator behind a link, their items and their answers."""

    annotator: Annotator
    assignments: list[Assignment]
    answers: dict[tuple[str, str], dict[str, Any]]

    @property
    def unanswered(self) -> list[Assignment]:
        """The items still without an answer, in order (the first is where to resume)."""
        return [a for a in self.assignments if (a.study, a.item) not in self.answers]


async def read_form(request: Request) -> dict[str, str]:
    """The posted form fields, refusing non-form, non-UTF-8, oversized or cross-site bodies."""
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
        raise Refused(403, "This form was posted from another site and was refused.")
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise Refused(415, "Only form posts are accepted here.")
    declared = request.headers.get("content-length", "")
    too_large = f"The form is too large (at most {MAX_BODY // 1024} KiB)."
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise Refused(413, too_large)
    body = b""
    try:
        with anyio.fail_after(BODY_SECONDS):
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    raise Refused(413, too_large)
    except TimeoutError:
        raise Refused(408, "The form took too long to arrive; please send it again.") from None
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(400, "The form could not be read as text.") from exc
    if any(len(v) != 1 for v in fields.values()):
        raise Refused(400, "The form holds a field twice.")
    return {k: v[0] for k, v in fields.items()}


class StudyApp:
    """Routes and pages of one study directory."""

    def __init__(self, study: Study, store: Store) -> None:
        self.study = study
        self.store = store
        self.items = {(i.study, i.key): i for i in study.items}
        self.env = Environment(
            loader=PackageLoader("ccpt.human.app", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.env.filters["emphasis"] = emphasis
        self.css = CSS_PATH.read_text(encoding="utf-8")

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """Render a page; a form page gets the session's CSRF token (set as a cookie when new)."""
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
        body = self.env.get_template(template).render(csrf=csrf, **context)
        response = HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)
        if request.cookies.get(CSRF_COOKIE) != csrf:
            scope = request.url.path.split("/")[:3]  # /a/<token> or /admin/<token>: one session per link
            response.set_cookie(CSRF_COOKIE, csrf, path="/".join(scope) + "/", httponly=True, samesite="strict")
        return response

    def message(self, request: Request, status: int, message: str, title: str = "Refused") -> HTMLResponse:
        """A page with one message."""
        return self.page(request, "message.html", status=status, title=title, message=message)

    async def posted_form(self, request: Request) -> dict[str, str]:
        """The posted form (:func:`read_form`), refused unless its CSRF field matches this session's cookie."""
        form = await read_form(request)
        cookie, posted = request.cookies.get(CSRF_COOKIE, ""), form.get("csrf", "")
        if not cookie or not posted or not hmac.compare_digest(cookie.encode(), posted.encode()):
            raise Refused(403, "This form has expired or did not come from this page; reload the page and try again.")
        return form

    def session(self, token: str) -> Session:
        """The annotator of a link, or 404."""
        annotator = self.store.find(token)
        if annotator is None:
            raise HTTPException(404)
        return Session(annotator, self.store.assignments(annotator.id), self.store.answers(annotator.id))

    def assignment(self, session: Session, position: int) -> tuple[Assignment, Item]:
        """The annotator's item at ``position``, or 404 (never another annotator's item)."""
        if not 1 <= position <= len(session.assignments):
            raise HTTPException(404)
        a = session.assignments[position - 1]
        return a, self.items[(a.study, a.item)]

    def item_context(self, session: Session, position: int, **extra: Any) -> dict[str, Any]:
        """Everything the item page shows."""
        a, item = self.assignment(session, position)
        context: dict[str, Any] = {
            "annotator": session.annotator,
            "url_root": f"/a/{session.annotator.token}",
            "position": position,
            "total": len(session.assignments),
            "n_answered": len(session.assignments) - len(session.unanswered),
            "item": item,
            "title": STUDY_TITLES[item.study],
            "value": session.answers.get((a.study, a.item), {}),
            "first_of_study": position == 1 or session.assignments[position - 2].study != a.study,
            "types": TYPE_LABELS,
            "rating_scale": list(RATING_SCALE),
            "relevance_labels": list(enumerate(RELEVANCE_LABELS, start=1)),
            "error": None,
        }
        if item.study == ANNOTATION:
            context["form"] = annotation_form(item)
        context.update(extra)
        return context

    async def home(self, request: Request) -> Response:
        """Resume: the first unanswered item, else the review page, else the thank-you page."""
        token = request.path_params["token"]
        session = await run_in_threadpool(self.session, token)
        if session.annotator.submitted:
            return self.message(request, 200, "Your answers are submitted. Thank you!", title="Submitted")
        resume = session.unanswered
        target = f"/a/{token}/item/{resume[0].position}" if resume else f"/a/{token}/review"
        return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)

    async def show_item(self, request: Request) -> Response:
        """One item's form, filled with the annotator's own answer if any."""
        session = await run_in_threadpool(self.session, request.path_params["token"])
        if session.annotator.submitted:
            return self.message(request, 200, "Your answers are submitted. Thank you!", title="Submitted")
        return self.page(request, "item.html", **self.item_context(session, request.path_params["n"]))

    async def save_item(self, request: Request) -> Response:
        """Save one answer (a revision replaces it), then go on to the next unanswered item."""
        token, position = request.path_params["token"], request.path_params["n"]
        session = await run_in_threadpool(self.session, token)
        a, item = self.assignment(session, position)
        form = await self.posted_form(request)
        if session.annotator.submitted:
            return self.message(request, 409, SUBMITTED_FINAL)
        try:
            value = check_answer(item, form)
        except AnswerError as exc:
            context = self.item_context(session, position, value=form, error=str(exc))
            return self.page(request, "item.html", status=400, **context)
        if not await run_in_threadpool(self.store.save, session.annotator.id, a.study, a.item, value):
            return self.message(request, 409, SUBMITTED_FINAL)
        return RedirectResponse(f"/a/{token}/", status_code=303, headers=SECURITY_HEADERS)

    async def review(self, request: Request) -> Response:
        """Every item with the annotator's own answer, links to revise, and the submit button."""
        session = await run_in_threadpool(self.session, request.path_params["token"])
        if session.annotator.submitted:
            return self.message(request, 200, "Your answers are submitted. Thank you!", title="Submitted")
        rows = [
            (a.position, self.items[(a.study, a.item)], session.answers.get((a.study, a.item)))
            for a in session.assignments
        ]
        return self.page(
            request,
            "review.html",
            title="Review and submit",
            url_root=f"/a/{session.annotator.token}",
            annotator=session.annotator,
            rows=rows,
            missing=len(session.unanswered),
        )

    async def submit(self, request: Request) -> Response:
        """Close the annotator's work once every item is answered."""
        token = request.path_params["token"]
        session = await run_in_threadpool(self.session, token)
        await self.posted_form(request)  # checks the CSRF token
        missing = len(session.unanswered)
        if missing:
            return self.message(request, 400, f"{missing} item(s) still need an answer before you can submit.")
        await run_in_threadpool(self.store.submit, session.annotator.id)
        return RedirectResponse(f"/a/{token}/", status_code=303, headers=SECURITY_HEADERS)

    def check_admin(self, token: str) -> None:
        """404 unless ``token`` is the admin token."""
        if not self.store.is_admin(token):
            raise HTTPException(404)

    def progress(self) -> list[dict[str, Any]]:
        """Answered / assigned per annotator and study (counts only: no answer is shown)."""
        rows = []
        assignments = self.store.all_assignments()
        for annotator in self.store.annotators():
            answers = self.store.answers(annotator.id)
            mine = assignments.get(annotator.id, [])
            per_study = {
                s: (sum((a.study, a.item) in answers for a in mine if a.study == s), sum(a.study == s for a in mine))
                for s in self.study.kinds
            }
            rows.append({"annotator": annotator, "per_study": per_study, "done": len(answers), "total": len(mine)})
        return rows

    async def admin(self, request: Request, exported: ExportResult | None = None) -> Response:
        """Progress per annotator and the export button (after an export, with the files written)."""
        token = request.path_params["token"]
        await run_in_threadpool(self.check_admin, token)
        rows = await run_in_threadpool(self.progress)
        return self.page(
            request, "admin.html", title="Study progress", rows=rows, kinds=self.study.kinds, titles=STUDY_TITLES,
            url_root=f"/admin/{token}", exported=exported, export_dir=self.study.root / "export",
        )  # fmt: skip

    async def export(self, request: Request) -> Response:
        """Write the export CSVs into STUDY_DIR/export and list them."""
        token = request.path_params["token"]
        await run_in_threadpool(self.check_admin, token)
        await self.posted_form(request)  # checks the CSRF token
        result = await run_in_threadpool(export_answers, self.study, self.store, self.study.root / "export")
        return await self.admin(request, exported=result)

    async def stylesheet(self, request: Request) -> Response:
        """The one stylesheet (served, not inline, so the CSP can forbid inline code)."""
        return PlainTextResponse(self.css, media_type="text/css", headers=SECURITY_HEADERS)

    async def refused(self, request: Request, exc: Exception) -> Response:
        """Refusals and HTTP errors as a page with one line; a busy database as 503 with a retry hint."""
        if isinstance(exc, Busy):
            response = self.message(request, 503, BUSY, title="Busy")
            response.headers["Retry-After"] = RETRY_AFTER
            return response
        if isinstance(exc, Refused):
            return self.message(request, exc.status_code, exc.detail)
        status = getattr(exc, "status_code", 500)
        text = "Not found." if status == 404 else "This request is not allowed."
        return HTMLResponse(
            self.env.get_template("message.html").render(title=str(status), message=text, csrf=""),
            status_code=status,
            headers=SECURITY_HEADERS,
        )


def create_app(study: Study, store: Store) -> Starlette:
    """The ASGI app of one study."""
    web = StudyApp(study, store)
    routes = [
        Route("/a/{token}/", web.home),
        Route("/a/{token}/item/{n:int}", web.show_item, methods=["GET"]),
        Route("/a/{token}/item/{n:int}", web.save_item, methods=["POST"]),
        Route("/a/{token}/review", web.review, methods=["GET"]),
        Route("/a/{token}/submit", web.submit, methods=["POST"]),
        Route("/admin/{token}/", web.admin, methods=["GET"]),
        Route("/admin/{token}/export", web.export, methods=["POST"]),
        Route("/static/app.css", web.stylesheet, methods=["GET"]),
    ]
    handlers: dict[Any, Any] = {Refused: web.refused, HTTPException: web.refused, Busy: web.refused}
    return Starlette(routes=routes, exception_handlers=handlers)
