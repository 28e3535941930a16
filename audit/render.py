"""Terminal rendering of audit summaries and transcripts (rich). Model text is
printed with markup disabled, and with control characters shown as `\\xNN`: it is
untrusted, and an escape sequence in a target's reply (ESC [, OSC, a carriage return)
must not style, move or rewrite the user's terminal."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from scaffold.events import Event
from scaffold.transcript import Transcript


# C0 controls but newline and tab, DEL, and C1 controls (0x9b is a one-byte CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """`text` with every control character but newline and tab written as a visible `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


class SafeText(Text):
    """A rich Text whose appended strings are made terminal-safe (model text goes through it)."""

    def append(self, text: Any, style: Any = None) -> "SafeText":  # type: ignore[override]
        super().append(terminal_safe(text) if isinstance(text, str) else text, style)
        return self


def _text(value: str, limit: int | None = None) -> Text:
    value = value if limit is None or len(value) <= limit else value[: limit - 1] + "…"
    return Text(terminal_safe(value))  # Text() never interprets markup


def print_summary(console: Console, judged: Any, resume_hint: str | None = None) -> None:
    """The end-of-run summary of `audit run` (`resume_hint`: the command that continues it, if it failed)."""
    t = judged.transcript
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    end = t.end.reason if t.end else "?"
    table.add_row("run", judged.result.run_id)
    table.add_row("target", _text(judged.target.name))
    table.add_row("auditor", _text(judged.job.auditor))
    table.add_row("status", f"{judged.result.status} ({end})")
    if judged.result.error:
        table.add_row("error", _text(judged.result.error))
    table.add_row("turns", str(t.auditor_turns))
    table.add_row("tokens", f"auditor {t.auditor_usage.total}, target {t.target_usage.total}")
    if t.total_usage.timed_out_requests:
        table.add_row("timed out", f"{t.total_usage.timed_out_requests} requests (their prompts are in the tokens)")
    table.add_row("findings", str(len(t.findings)))
    hypotheses = t.report.hypotheses if t.report else []
    for rank, h in enumerate(hypotheses[:3], start=1):
        cites = ", ".join(h.cited_message_ids) or "no citations"
        table.add_row(f"  #{rank}", _text(f"{h.description} [{cites}] (confidence {h.confidence:.2f})", 160))
    j = judged.judge
    if j.error:
        table.add_row("judge", _text(f"{j.judge}: {j.error}"))
    elif j.quirk_id == "none":
        table.add_row("judge", f"{j.judge}: control target; false positive = {j.false_positive}")
    else:
        rank = f" at rank {j.matched_rank}" if j.matched_rank else ""
        table.add_row(
            "judge",
            f"{j.judge}: quirk identified = {j.identified}{rank}; grounded = {j.grounded}; evidence {j.evidence_score:.2f}",
        )
    parts = ", ".join(f"{k} {v:g}" for k, v in judged.reward.components.items())
    table.add_row("reward", f"{judged.reward.name} {judged.reward.reward:.3f} ({parts})")
    table.add_row("wall time", f"{judged.wall_s:.2f} s")
    table.add_row("transcript", _text(str(judged.out_dir / "transcript.json")))
    table.add_row("report", _text(str(judged.out_dir / "report.json")))
    console.print(Panel(table, title="audit", expand=False))
    if judged.result.status != "completed":
        hint = resume_hint or f"audit run --resume {judged.result.run_id}"
        console.print(_text(f"Resume with: {hint}"))


def _event_lines(event: Event) -> Text:
    line = SafeText()
    if event.kind == "auditor_message":
        m = event.message
        if m.role in ("system", "user"):
            line.append(f"[{m.id}] auditor {m.role}: ", style="dim")
            line.append(m.content[:300])
        elif m.role == "assistant":
            line.append(f"[{m.id}] AUDITOR: ", style="bold cyan")
            line.append(m.content)
            for call in m.tool_calls:
                line.append(f"\n    -> {call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())[:400]})")
        else:
            style = "red" if m.is_error else "dim"
            line.append(f"[{m.id}] tool result: ", style=style)
            line.append(m.content[:600])
    elif event.kind == "target_message":
        m = event.message
        label = {"system": "target system", "user": "to target", "assistant": "TARGET", "tool": "tool -> target"}[m.role]
        line.append(f"[{m.id}] {label}: ", style="bold green" if m.role == "assistant" else "green")
        line.append(m.content)
        for call in m.tool_calls:
            line.append(f"\n    -> {call.id} {call.name}({call.arguments})")
    elif event.kind == "rollback":
        line.append(f"<< rollback to {event.to_message_id}{' (restart)' if event.restart else ''}", style="yellow")
    elif event.kind == "tool_created":
        line.append(f"++ target tool {event.tool.name}: ", style="magenta")
        line.append(event.tool.description[:200])
    elif event.kind == "finding":
        line.append("!! finding: ", style="bold magenta")
        line.append(f"{event.finding.description} {event.finding.cited_message_ids}")
    elif event.kind == "report":
        line.append("== report: ", style="bold magenta")
        for h in event.report.hypotheses:
            line.append(f"\n   - {h.description} {h.cited_message_ids} ({h.confidence:.2f})")
    elif event.kind == "error":
        line.append(f"xx {event.where} error: ", style="red")
        line.append(event.error)
    elif event.kind == "end":
        line.append(f"== end: {event.reason} {event.detail}", style="bold")
    return line


def print_transcript(
    console: Console, row: dict[str, Any], transcript: Transcript, judge: dict[str, Any] | None, view: str
) -> None:
    """`audit show`: the run's header, then the chosen view."""
    console.print(
        Panel(
            _text(f"run {row['run_id']}  target {row['target_name']}  auditor {row['auditor_name']}  "
                  f"status {row['status']}  turns {transcript.auditor_turns}"),
            expand=False,
        )
    )
    if view == "target":
        for message in transcript.target_view():
            console.print(_text(f"[{message.id}] {message.role}: {message.content}"))
    elif view == "auditor":
        for message in transcript.auditor_view():
            console.print(_text(f"[{message.id}] {message.role}: {message.content}"))
    else:
        for event in transcript.events:
            console.print(_event_lines(event))
    if judge:
        console.print(_text("judge: " + str({k: v for k, v in judge.get("judge", {}).items() if k != "hypotheses"})))
        console.print(_text("reward: " + str(judge.get("reward"))))
