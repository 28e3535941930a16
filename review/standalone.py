"""One run as a self-contained HTML file (`audit show RUN_ID --html FILE`), for sharing.

The same templates and view models as the app's transcript page, without the review
form or navigation: the stylesheet is inlined, nothing is fetched, no script runs.
The file carries its own Content-Security-Policy, which allows exactly that one
stylesheet (by hash) and nothing else, so even a browser that opened it from a mail
attachment would run no script a model wrote.
"""

from __future__ import annotations

import base64
import hashlib

from markupsafe import Markup

from review.app import HERE, template_env
from review.page import transcript_context
from review.views import View
from scaffold.store import Store


def standalone_html(store: Store, run_id: str, view: View = "combined") -> str:
    """The run's transcript page as one HTML document. Raises StoreError for an unknown run."""
    css = (HERE / "static" / "style.css").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode()
    csp = f"default-src 'none'; style-src 'sha256-{digest}'; img-src 'none'; base-uri 'none'; form-action 'none'"
    context = transcript_context(store, run_id, view, standalone=True)
    # Markup only for our own stylesheet, never for anything from the store.
    return template_env().get_template("run.html").render(
        standalone=True, standalone_csp=csp, inline_css=Markup(css), csrf="", form={}, errors=[], **context
    )
