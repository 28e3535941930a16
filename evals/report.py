"""report.md and report.html of an eval: the numbers a safety team drops into a review.

The HTML is self-contained (inline CSS, plots as data: URIs, no script), so it can be
mailed or attached as one file. Everything that came from a model (hypotheses, errors)
is escaped: an auditor's report is untrusted text.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from evals import plots
from evals.results import AuditRow, EvalResults, Rate

PLOTS = {
    "detection_by_quirk.png": ("Detection by quirk", plots.detection_by_quirk),
    "detection_vs_false_positives.png": ("Detection vs false positives", lambda r: plots.detection_vs_false_positives([r])),
    "cost_vs_detection.png": ("Cost vs detection", lambda r: plots.cost_vs_detection([r])),
}


def fmt_rate(rate: Rate) -> str:
    """`62.5% (5/8; 95% CI 30.6–86.3%)`."""
    if rate.n == 0:
        return "n/a (0 audits)"
    return f"{100 * (rate.rate or 0):.1f}% ({rate.k}/{rate.n}; 95% CI {100 * rate.ci_low:.1f}–{100 * rate.ci_high:.1f}%)"


def summary_rows(results: EvalResults) -> list[tuple[str, str]]:
    """(label, value) lines of the summary table."""
    agg = results.aggregates
    cost, unit = plots.cost_per_audit(results)
    rows = [("detection, grounded (seeded quirks)", fmt_rate(agg.detection))]
    rows += [(f"detection, grounded, {split}", fmt_rate(rate)) for split, rate in agg.detection_by_split.items()]
    rows += [("detection, named (no evidence needed)", fmt_rate(agg.named_detection))]
    rows += [(f"detection, named, {split}", fmt_rate(rate)) for split, rate in agg.named_by_split.items()]
    if agg.named_own_words is not None:
        rows += [("named in own words (quotes emptied)", fmt_rate(agg.named_own_words))]
    if agg.strategy_entropy_bits is not None:
        rows += [("strategy entropy (bits, patterns)", f"{agg.strategy_entropy_bits:.2f} ({agg.strategy_patterns})")]
    rows += generated_rows(results)
    rows += [("false positives (clean control)", fmt_rate(agg.false_positives))]
    if agg.claims_on_quirks is not None:
        rows += [("claims anything (seeded quirks)", fmt_rate(agg.claims_on_quirks))]
    rows += [(f"pass@{k}", f"{100 * v:.1f}%") for k, v in agg.pass_at.items()]
    rows += [
        ("mean grounded reward", f"{agg.mean_reward:.3f}" if agg.mean_reward is not None else "n/a"),
        ("audits (failed)", f"{agg.audits} ({agg.failed})"),
        ("mean turns / tokens / wall s", f"{agg.mean_turns:.1f} / {agg.mean_tokens:.0f} / {agg.mean_wall_s:.2f}"),
        ("valid tool-call turns", "n/a" if agg.valid_tool_call_rate is None else f"{agg.valid_tool_call_rate:.1%}"),
        ("cost", f"{cost:.4g} {unit}" + (f" (total ${agg.cost_usd:.4f})" if agg.cost_usd is not None else "")),
        ("throughput", f"{agg.audits_per_minute:.1f} audits/min over {results.wall_s:.1f} s"),
    ]
    return rows


HOLDOUT_LABELS = {"train": "train", "family": "held-out families", "combination": "held-out combinations"}


def generated_rows(results: EvalResults) -> list[tuple[str, str]]:
    """Generated quirks (targets/grammar/): grounded and named detection by how a quirk is held out, then by
    family; nothing for a suite without them."""
    agg = results.aggregates
    rows = [
        (f"generated, {HOLDOUT_LABELS.get(kind, kind)}: grounded / named",
         f"{fmt_rate(rate)} / {fmt_rate(agg.named_by_holdout[kind])}")
        for kind, rate in agg.detection_by_holdout.items()
    ]
    rows += [
        (f"family {family}: grounded / named", f"{rate.k}/{rate.n} / {agg.named_by_family[family].k}/{rate.n}")
        for family, rate in agg.detection_by_family.items()
    ]
    return rows


def write_plots(results: EvalResults, out: Path) -> dict[str, bytes]:
    """Render every plot; also saved as DIR/plots/*.png for the Markdown report."""
    (out / "plots").mkdir(parents=True, exist_ok=True)
    images = {}
    for name, (_, render) in PLOTS.items():
        images[name] = render(results)
        (out / "plots" / name).write_bytes(images[name])
    return images


def _md_cell(text: str) -> str:
    # Model or server text: no table breaks, and no raw HTML for renderers that pass it through.
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def markdown(results: EvalResults) -> str:
    """report.md."""
    lines = [
        f"# Eval `{results.suite['name']}`: `{results.auditor}`",
        "",
        f"Judge `{results.judge}`, {results.started_at} to {results.finished_at}, eval id `{results.eval_id}`.",
        f"Command: `{results.command}`",
        "",
        "| metric | value |",
        "|---|---|",
        *[f"| {label} | {value} |" for label, value in summary_rows(results)],
        "",
        "## By quirk",
        "",
        "| quirk | split | detected (grounded) | named | pass@1 | mean reward |",
        "|---|---|---|---|---|---|",
    ]
    for q in results.aggregates.by_quirk:
        reward = f"{q.mean_reward:.3f}" if q.mean_reward is not None else "n/a"
        lines.append(
            f"| {q.quirk} | {q.split} | {fmt_rate(q.detection)} | {fmt_rate(q.named)} | {100 * q.pass_at['1']:.1f}% | {reward} |"
        )
    lines += ["", *[f"![{title}](plots/{name})" for name, (title, _) in PLOTS.items()], ""]
    failed = [r for r in results.rows if r.status != "completed"]
    if failed:
        lines += ["## Failed audits", "", "| case | run | error |", "|---|---|---|"]
        lines += [f"| {r.case_id} | {r.run_id} | {_md_cell(r.error or '')} |" for r in failed]
    return "\n".join(lines) + "\n"


_CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
th{background:#f3f3f3}img{max-width:100%;display:block;margin:1rem 0}code{background:#f3f3f3;padding:0 .2rem}
.muted{color:#666}"""


def _verdict(row: AuditRow) -> str:
    if row.split == "control":
        return str(row.false_positive)
    return f"{row.grounded} / {row.identified}"


def html_report(results: EvalResults, images: dict[str, bytes]) -> str:
    """report.html: self-contained, every model-written string escaped."""
    e = html.escape
    summary = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in summary_rows(results))
    quirks = "".join(
        f"<tr><td>{e(q.quirk)}</td><td>{e(q.split)}</td><td>{e(fmt_rate(q.detection))}</td><td>{e(fmt_rate(q.named))}</td>"
        f"<td>{100 * q.pass_at['1']:.1f}%</td><td>{'n/a' if q.mean_reward is None else f'{q.mean_reward:.3f}'}</td></tr>"
        for q in results.aggregates.by_quirk
    )
    figures = "".join(
        f"<h2>{e(title)}</h2><img alt='{e(title)}' src='data:image/png;base64,"
        f"{base64.b64encode(images[name]).decode()}'>"
        for name, (title, _) in PLOTS.items()
    )
    audits = "".join(
        f"<tr><td>{e(r.case_id)}</td><td>{e(r.status)}</td><td>{e(_verdict(r))}</td>"
        f"<td>{e(r.top_hypothesis or '')}</td><td>{e(r.error or '')}</td></tr>"
        for r in results.rows
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{e(results.suite['name'])}: {e(results.auditor)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Eval <code>{e(results.suite['name'])}</code>: <code>{e(results.auditor)}</code></h1>"
        f"<p class='muted'>Judge <code>{e(results.judge)}</code>, {e(results.started_at)} to {e(results.finished_at)}, "
        f"eval id <code>{e(results.eval_id)}</code>. Command: <code>{e(results.command)}</code></p>"
        f"<table>{summary}</table><h2>By quirk</h2><table><tr><th>quirk</th><th>split</th><th>detected (grounded)</th>"
        f"<th>named</th><th>pass@1</th><th>mean reward</th></tr>{quirks}</table>{figures}"
        "<h2>Audits</h2><table><tr><th>case</th><th>status</th><th>grounded / named (control: false positive)</th>"
        f"<th>top hypothesis</th><th>error</th></tr>{audits}</table></body></html>"
    )


def write_reports(results: EvalResults, out: Path) -> None:
    """Write report.md, report.html and plots/ into `out`."""
    images = write_plots(results, out)
    (out / "report.md").write_text(markdown(results), encoding="utf-8")
    (out / "report.html").write_text(html_report(results, images), encoding="utf-8")
