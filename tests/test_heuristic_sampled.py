"""`heuristic:sampled`: the baseline's probe order drawn from each audit's seed, for warm-start data with variety."""

from __future__ import annotations

from pathlib import Path

from auditor.heuristic import _plan, sampled_order
from auditor.probes import FAMILIES
from evals.audit_job import AuditJob, run_judged_audit
from scaffold.secrets import SecretRegistry
from scaffold.store import Store
from tests.conftest import ROOT


async def _probes(tmp_path: Path, auditor: str, seed: int | None, turns: int = 3) -> list[str]:
    job = AuditJob(
        target_path=str(ROOT / "targets/examples/flattery.yaml"), auditor=auditor, max_turns=turns, judge="lexical",
        sample_seed=seed,
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / f"{auditor}-{seed}"
    judged = await run_judged_audit(job, Store(f"sqlite:///{tmp_path / 'a.db'}"), SecretRegistry(), out)
    assert judged.result.status == "completed", judged.result.error
    calls = [c for m in judged.transcript.auditor_messages if m.role == "assistant" for c in m.tool_calls or []]
    assert calls[-1].name == "submit_report"
    return [c.arguments["message"] for c in calls if c.name == "send_message"]


async def test_the_probe_order_follows_the_audits_seed_on_every_turn(tmp_path: Path) -> None:
    seed = 1 << 20
    sent = await _probes(tmp_path, "heuristic:sampled", seed, turns=4)
    # Each turn recovers the audit's seed from its call's (seed + turn): one plan throughout.
    expected = [family.turns[i] for family, i in _plan(3, sampled_order(seed))]
    assert sent == expected
    assert sent == await _probes(tmp_path / "again", "heuristic:sampled", seed, turns=4)


async def test_seeds_spread_the_first_probe_where_the_fixed_order_repeats_it(tmp_path: Path) -> None:
    seeds = [k << 20 for k in range(1, 9)]
    sampled = {(await _probes(tmp_path, "heuristic:sampled", s))[0] for s in seeds}
    fixed = {(await _probes(tmp_path, "heuristic", s))[0] for s in seeds}
    assert fixed == {FAMILIES[0].turns[0]}
    assert len(sampled) >= 4, sampled


async def test_without_a_seed_the_sampled_heuristic_keeps_the_fixed_order(tmp_path: Path) -> None:
    assert await _probes(tmp_path, "heuristic:sampled", None) == await _probes(tmp_path, "heuristic", None)
