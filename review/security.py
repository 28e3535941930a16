"""Who may use the review app, and what every response carries.

- Binding: 127.0.0.1 / localhost / ::1 by default. Any other host needs a token
  (`--token` or AUDITRL_REVIEW_TOKEN); `check_binding` refuses otherwise.
- Token: when set, every request needs it: an `Authorization: Bearer` header, or the
  session cookie set after opening any page once with `?token=...` (the app then
  redirects to the same page without it, so the token leaves the address bar). The
  cookie holds an HMAC of the token, not the token; comparisons are constant-time.
- Without a token (local only), the Host header must name the loopback, so a web page
  elsewhere cannot reach the app through DNS rebinding.
- CSRF: double submit. A random per-session value in a SameSite=Strict cookie and in a
  hidden field of every form; `check_csrf` compares them on every POST.
- Headers: a strict Content-Security-Policy (scripts and styles only from this
  server, no inline script), nosniff, no framing, no referrer.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Awaitable, Callable, Mapping
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
TOKEN_ENV = "AUDITRL_REVIEW_TOKEN"
MIN_TOKEN_CHARS = 16
SESSION_COOKIE = "auditrl_review_session"
CSRF_COOKIE = "auditrl_csrf"
CSRF_FIELD = "csrf"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class BindingError(ValueError):
    """The host/token combination is unsafe."""


def check_binding(host: str, token: str | None) -> None:
    """Refuse a non-local host without a token, and a token too short to resist guessing."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise BindingError(f"the review token must be at least {MIN_TOKEN_CHARS} characters")
    if host.strip("[]") not in LOCAL_HOSTS and not token:
        raise BindingError(
            f"--host {host}: a non-local address needs an access token (--token or {TOKEN_ENV})"
        )


def _session_value(token: str) -> str:
    return hmac.new(token.encode(), b"auditrl-review-session", hashlib.sha256).hexdigest()


def _same(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(str(a).encode(), str(b).encode())


def _host_is_local(host_header: str) -> bool:
    host = host_header.rsplit(":", 1)[0] if not host_header.startswith("[") else host_header[1:].split("]")[0]
    return host in LOCAL_HOSTS


class Guard:
    """The app's one middleware: token, Host check, CSRF cookie, security headers."""

    def __init__(self, token: str | None) -> None:
        self.token = token or None
        self.session = _session_value(token) if token else None

    def _authorised(self, request: Request) -> bool:
        if self.token is None:
            return _host_is_local(request.headers.get("host", ""))
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and _same(credential.strip(), self.token):
            return True
        return _same(request.cookies.get(SESSION_COOKIE), self.session)

    async def __call__(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await self._respond(request, call_next)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    async def _respond(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        offered = request.query_params.get("token")
        if self.token is not None and offered is not None:
            if not _same(offered, self.token):
                return PlainTextResponse("wrong access token", status_code=401)
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            # One leading slash: "//host/..." would send the browser to another server.
            target = "/" + request.url.path.lstrip("/") + (f"?{urlencode(rest)}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(SESSION_COOKIE, self.session or "", httponly=True, samesite="strict", path="/")
            return redirect
        if not self._authorised(request):
            if self.token is None:
                return PlainTextResponse("this review server answers only on the loopback address", status_code=403)
            return PlainTextResponse(
                "this review server needs its access token: open any page once with ?token=YOUR_TOKEN, "
                "or send 'Authorization: Bearer YOUR_TOKEN'",
                status_code=401,
            )
        csrf = request.cookies.get(CSRF_COOKIE)
        fresh = not csrf or len(csrf) < 32
        request.state.csrf = secrets.token_urlsafe(32) if fresh else csrf
        response = await call_next(request)
        if fresh:
            response.set_cookie(CSRF_COOKIE, request.state.csrf, httponly=True, samesite="strict", path="/")
        return response


def check_csrf(request: Request, form: Mapping[str, str]) -> bool:
    """Whether a POST's hidden field matches its CSRF cookie (and its Origin, if sent, is this server)."""
    origin = request.headers.get("origin")
    if origin and origin != "null" and origin.split("://", 1)[-1] != request.headers.get("host"):
        return False
    return _same(form.get(CSRF_FIELD), request.cookies.get(CSRF_COOKIE))
