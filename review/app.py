"""The review app's routes: runs list, transcript, review form, agreement and label export.

`create_app(store, token)` builds the FastAPI app over an open `Store`. Handlers that
only read are plain functions (FastAPI runs them in its thread pool, so a slow query
never blocks the server); the one POST reads its body, checks CSRF, validates the form
with `ReviewInput` and appends a review.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from review.agreement import RUBRIC_NAMES, agreement
from review.labels import add_review, export_rows, to_csv, to_jsonl
from review.models import SEVERITIES, VERDICT_HELP, VERDICTS, ReviewInput, RunFilter
from review.page import transcript_context
from review.queries import filter_options, list_runs
from review.security import Guard, check_csrf
from review.verdicts import when
from review.views import VIEWS
from scaffold.store import Store, StoreError

HERE = Path(__file__).parent
MAX_FORM_BYTES = 64 * 1024
REVIEWER_COOKIE = "auditrl_reviewer"
COLUMNS = [
    ("", "run"), ("created", "created"), ("target", "target"), ("quirk", "quirk"), ("auditor", "auditor"),
    ("judge", "judge"), ("", "identified"), ("", "false positive"), ("evidence", "evidence"), ("reward", "reward"),
    ("review", "review"), ("status", "status"),
]


def template_env() -> Environment:
    """The Jinja2 environment of every review page: autoescape on for every template."""
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(when=when, run_url=run_url)
    return env


def run_url(run_id: str, view: str | None = None) -> str:
    """The transcript page of `run_id` (always a path on this server)."""
    return f"/runs/{quote(run_id, safe='')}" + (f"?view={view}" if view else "")


def create_app(store: Store, token: str | None = None, traces: dict[str, Any] | None = None) -> FastAPI:
    """The review app over `store`; with `token`, every request must carry it. `traces` (an `audit traces`
    traces.json of runs in this store) adds its behaviours, each linked to example transcripts, at /traces."""
    app = FastAPI(title="auditrl review", docs_url=None, redoc_url=None, openapi_url=None)
    app.middleware("http")(Guard(token))
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    env = template_env()

    def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(csrf=getattr(request.state, "csrf", ""), standalone=False, **context)
        return HTMLResponse(html, status_code=status)

    def error(request: Request, status: int, title: str, message: str) -> HTMLResponse:
        return page(request, "error.html", status, code=status, title=title, message=message)

    @app.get("/", response_class=HTMLResponse)
    def runs_page(request: Request) -> Response:
        try:
            f = RunFilter.from_query(request.query_params)
        except ValidationError as exc:
            return error(request, 400, "Bad filter", "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in exc.errors()))
        result = list_runs(store.engine, f)

        def url(**changes: Any) -> str:
            return "/?" + urlencode(f.query(**changes))

        def sort_url(key: str) -> str:
            order = ("desc" if f.order == "asc" else "asc") if f.sort == key else "desc"
            return url(sort=key, order=order, page=1)

        return page(
            request, "runs.html", f=f, page=result, options=filter_options(store.engine), columns=COLUMNS,
            sort_url=sort_url, page_url=lambda n: url(page=n),
        )

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: str, view: str = "combined") -> Response:
        if view not in VIEWS:
            return error(request, 400, "Unknown view", f"view must be one of {', '.join(VIEWS)}")
        return _transcript(request, run_id, view, {"reviewer": request.cookies.get(REVIEWER_COOKIE, "")}, [])

    def _transcript(request: Request, run_id: str, view: str, form: dict[str, str], errors: list[str],
                    status: int = 200) -> Response:
        try:
            context = transcript_context(store, run_id, view)  # type: ignore[arg-type]
        except StoreError:
            return error(request, 404, "No such run", f"There is no run {run_id!r} in this store.")
        return page(
            request, "run.html", status, **context, form=form, errors=errors, verdicts=VERDICTS,
            verdict_help=VERDICT_HELP, severities=SEVERITIES, review_action=f"{run_url(run_id)}/reviews",
            rubric_names=sorted(RUBRIC_NAMES),
            view_url=lambda v: run_url(run_id, v),
        )

    @app.post("/runs/{run_id}/reviews")
    async def submit_review(request: Request, run_id: str) -> Response:
        if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return await run_in_threadpool(error, request, 415, "Unsupported form", "Send the review form as a form.")
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return await run_in_threadpool(error, request, 413, "Form too large", "The review form is too large.")
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if not check_csrf(request, form):
            return await run_in_threadpool(
                error, request, 403, "Form expired", "The form's CSRF token did not match; reload the page and submit again."
            )
        view = form.get("view") if form.get("view") in VIEWS else "combined"
        try:
            review = ReviewInput.model_validate(form)
        except ValidationError as exc:
            problems = [f"{e['loc'][0] if e['loc'] else 'form'}: {e['msg']}" for e in exc.errors()]
            return await run_in_threadpool(_transcript, request, run_id, view, form, problems, 400)
        try:
            await run_in_threadpool(add_review, store, run_id, review)
        except StoreError:
            return await run_in_threadpool(error, request, 404, "No such run", f"There is no run {run_id!r}.")
        response = RedirectResponse(f"{run_url(run_id, view)}#history", status_code=303)
        response.set_cookie(REVIEWER_COOKIE, review.reviewer, httponly=True, samesite="strict", path="/")
        return response

    @app.get("/traces", response_class=HTMLResponse)
    def traces_page(request: Request) -> Response:
        return page(request, "traces.html", t=traces)

    @app.get("/agreement", response_class=HTMLResponse)
    def agreement_page(request: Request) -> Response:
        return page(request, "agreement.html", a=agreement(store))

    @app.get("/export/labels.jsonl")
    def export_jsonl(history: bool = False) -> Response:
        return Response(to_jsonl(export_rows(store, history)), media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="review-labels.jsonl"'})

    @app.get("/export/labels.csv")
    def export_csv(history: bool = False) -> Response:
        return Response(to_csv(export_rows(store, history)), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="review-labels.csv"'})

    return app
