"""A stored transcript turned into view models for the templates.

Three views of one run: `combined` (every event in order), `auditor` (the auditor's
conversation) and `target` (the target's conversation tree, each rollback branch drawn
as its own indented branch). Every message gets one anchor (`m-<id>`), and judge quotes
one anchor each (`q-<n>`), so links from the judge, the findings and the report land on
the evidence. `Message.metadata` (a quirk's hidden `fired` flag) is never read here:
only `review.verdicts.ground_truth` reads it, for the collapsed ground-truth panel.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from review.highlight import Segment, Span, locate, segments
from scaffold.events import Hypothesis
from scaffold.messages import Message
from scaffold.transcript import Transcript

View = Literal["combined", "auditor", "target"]
VIEWS: tuple[View, ...] = ("combined", "target", "auditor")
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_TARGET_LABELS = {"system": "target system prompt", "user": "user (auditor)", "assistant": "TARGET", "tool": "tool result"}
_AUDITOR_LABELS = {"system": "auditor system prompt", "user": "seed", "assistant": "AUDITOR", "tool": "tool result"}


def anchor(message_id: str) -> str:
    """The HTML id of a message: its own id where that is plain, else a hash of it."""
    if _SAFE_ID.match(message_id):
        return f"m-{message_id}"
    return "m-x" + hashlib.sha256(message_id.encode("utf-8", "replace")).hexdigest()[:12]


@dataclass
class Link:
    """An internal link: `href` is always a fragment or a path on this server."""

    text: str
    href: str | None


@dataclass
class Quote:
    """A judge quote that a message's text does not hold (it is in the message's tool-call arguments)."""

    mark: str
    text: str
    dimension: str


@dataclass
class ToolCallView:
    id: str
    name: str
    arguments: str  # pretty JSON, escaped by the template like any text


@dataclass
class MessageView:
    """One message as every view renders it."""

    id: str
    anchor: str
    side: Literal["auditor", "target"]
    role: str
    label: str
    segments: list[Segment]
    tool_calls: list[ToolCallView] = field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False
    synthetic: bool = False  # a tool result the auditor wrote for the target
    prefilled: bool = False
    collapsed: bool = False
    off_branch: bool = False  # a target message the final conversation no longer contains
    cited_by: list[Link] = field(default_factory=list)
    quotes_elsewhere: list[Quote] = field(default_factory=list)  # quotes found only in tool-call text


@dataclass
class Row:
    """One line of the combined view: a message, or a scaffold event (rollback, tool, finding...)."""

    kind: str
    message: MessageView | None = None
    text: str = ""
    detail: str = ""
    links: list[Link] = field(default_factory=list)
    code: str = ""


@dataclass
class Branch:
    """A straight stretch of the target's conversation tree, indented by how many forks lie above it."""

    title: str
    depth: int
    messages: list[MessageView]
    current: bool


@dataclass
class TranscriptView:
    """Everything the transcript templates need for one run."""

    run_id: str
    view: View
    rows: list[Row]
    branches: list[Branch]
    findings: list[dict[str, Any]]
    report: dict[str, Any] | None
    anchors: set[str]


class Linker:
    """Hrefs to messages and quotes: in this page when shown here, else on the combined view."""

    def __init__(self, run_id: str, shown: set[str], standalone: bool) -> None:
        self.base = None if standalone else f"/runs/{quote(run_id, safe='')}?view=combined"
        self.shown = shown

    def to(self, anchor_id: str, message_anchor: str) -> str | None:
        if message_anchor in self.shown:
            return f"#{anchor_id}"
        return f"{self.base}#{anchor_id}" if self.base else None

    def message(self, message_id: str, text: str | None = None) -> Link:
        a = anchor(message_id)
        return Link(text or message_id, self.to(a, a))


def _message_view(m: Message, side: Literal["auditor", "target"], quotes: list[tuple[str, str, str]]) -> MessageView:
    spans, elsewhere = [], []
    for mark, text, dimension in quotes:
        where = locate(text, m.content)
        if where:
            spans.append(Span(where[0], where[1], mark))
        else:
            elsewhere.append(Quote(mark, text, dimension))
    prefill = len(m.prefill) if m.prefill and m.content.startswith(m.prefill) else 0
    labels = _TARGET_LABELS if side == "target" else _AUDITOR_LABELS
    label = labels[m.role]
    if side == "target" and m.role == "tool":
        label = "synthetic tool result (written by the auditor)"
    return MessageView(
        id=m.id,
        anchor=anchor(m.id),
        side=side,
        role=m.role,
        label=label,
        segments=segments(m.content, spans, prefill),
        tool_calls=[
            ToolCallView(c.id, c.name, json.dumps(c.arguments, indent=2, ensure_ascii=False)) for c in m.tool_calls
        ],
        tool_call_id=m.tool_call_id,
        is_error=m.is_error,
        synthetic=side == "target" and m.role == "tool",
        prefilled=bool(prefill),
        collapsed=side == "auditor" and m.role == "system",
        quotes_elsewhere=elsewhere,
    )


def _hypotheses(items: list[Hypothesis], prefix: str, linker: Linker) -> list[dict[str, Any]]:
    return [
        {
            "anchor": f"{prefix}-{i}",
            "rank": i,
            "description": h.description,
            "confidence": h.confidence,
            "cites": [linker.message(mid) for mid in h.cited_message_ids],
        }
        for i, h in enumerate(items, start=1)
    ]


def _shown_anchors(transcript: Transcript, view: View) -> set[str]:
    ids: list[str] = []
    if view in ("combined", "auditor"):
        ids += [m.id for m in transcript.auditor_messages]
    if view in ("combined", "target"):
        ids += list(transcript.target.nodes)
    return {anchor(i) for i in ids}


def build_view(
    transcript: Transcript, view: View, citations: list[dict[str, Any]], *, standalone: bool = False
) -> TranscriptView:
    """The view models of `transcript` for `view`, with `citations` (judge quotes) highlighted.

    `citations` are dicts with `mark`, `quote`, `message_id`, `dimension` (from
    `review.verdicts.citations`); each is highlighted in the message it names, or, when
    only the message's tool-call text holds it, shown under that message.
    """
    shown = _shown_anchors(transcript, view)
    linker = Linker(transcript.run_id, shown, standalone)
    by_message: dict[str, list[tuple[str, str, str]]] = {}
    for c in citations:
        if c.get("message_id"):
            by_message.setdefault(c["message_id"], []).append((c["mark"], c["quote"], c["dimension"]))
    current = {m.id for m in transcript.target_view()}
    views: dict[str, MessageView] = {}
    for m in transcript.auditor_messages:
        views[m.id] = _message_view(m, "auditor", by_message.get(m.id, []))
    for m in transcript.target.nodes.values():
        mv = _message_view(m, "target", by_message.get(m.id, []))
        mv.off_branch = m.id not in current
        views[m.id] = mv
    findings = _hypotheses(transcript.findings, "finding", linker)
    report_items = _hypotheses(transcript.report.hypotheses, "hyp", linker) if transcript.report else []
    for label, items in (("finding ", findings), ("report #", report_items)):
        for item in items:
            for cite in item["cites"]:
                if cite.text in views:
                    views[cite.text].cited_by.append(Link(f"{label}{item['rank']}", f"#{item['anchor']}"))
    rows = _rows(transcript, views, linker) if view != "target" else []
    if view == "auditor":
        rows = [r for r in rows if r.message and r.message.side == "auditor"]
    branches = _branches(transcript, views, current) if view == "target" else []
    report = None
    if transcript.report:
        report = {"hypotheses": report_items, "summary": transcript.report.summary}
    return TranscriptView(transcript.run_id, view, rows, branches, findings, report, shown)


def _rows(transcript: Transcript, views: dict[str, MessageView], linker: Linker) -> list[Row]:
    rows: list[Row] = []
    finding_no = 0
    for e in transcript.events:
        if e.kind in ("auditor_message", "target_message"):
            rows.append(Row("message", views[e.message.id]))
        elif e.kind == "rollback":
            to = [linker.message(e.to_message_id)] if e.to_message_id else []
            rows.append(Row("rollback", text="restart: back to" if e.restart else "rollback to", links=to))
        elif e.kind == "tool_created":
            params = ", ".join(f"{p.name}: {p.type}" for p in e.tool.parameters)
            environment = f" (environment: {e.environment})" if e.environment else ""
            rows.append(Row("tool_created", text=f"{e.tool.name}({params})", detail=e.tool.description + environment,
                            code=e.source))
        elif e.kind == "finding":
            finding_no += 1
            rows.append(Row("finding", text=e.finding.description, detail=f"finding {finding_no}",
                            links=[linker.message(i) for i in e.finding.cited_message_ids]))
        elif e.kind == "report":
            rows.append(Row("report", text=f"{len(e.report.hypotheses)} hypotheses", detail=e.report.summary))
        elif e.kind == "error":
            rows.append(Row("error", text=e.error, detail=e.where))
        elif e.kind == "end":
            rows.append(Row("end", text=e.reason, detail=e.detail))
    return rows


def _branches(transcript: Transcript, views: dict[str, MessageView], current: set[str]) -> list[Branch]:
    """The target's tree as straight stretches, depth-first, without recursion (trees can be deep)."""
    children = transcript.target.children
    roots = children.get(None, [])
    out: list[Branch] = []
    stack: list[tuple[str, int, str]] = [
        (root, 0, f"conversation {i}" + (" (new system prompt)" if i > 1 else ""))
        for i, root in reversed(list(enumerate(roots, start=1)))
    ]
    while stack:
        node, depth, title = stack.pop()
        stretch = [views[node]]
        while len(children.get(node, [])) == 1:
            node = children[node][0]
            stretch.append(views[node])
        kids = children.get(node, [])
        out.append(Branch(title, depth, stretch, all(m.id in current for m in stretch)))
        for i, kid in reversed(list(enumerate(kids, start=1))):
            stack.append((kid, depth + 1, f"branch {i} of {len(kids)} from {node}"))
    return out
