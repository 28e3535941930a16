"""A group's shared start (tasks.shared_turns): an audit's first turns played once, continued
by several audits that play only the turns after, and trained on only for those turns.

The real audit graph with a scripted auditor, then the tiny random Llama as a constrained
token-level policy (exact prompt extension and the loss mask), then one real GRPO step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold.events import AuditorMessageEvent, EndEvent, TargetMessageEvent
from scaffold.messages import GenerateConfig, Message, ToolCall
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import SharedStart, play_shared_start, run_audit
from scaffold.state import AuditBudget
from scaffold.store import Store
from scaffold.transcript import Transcript
from tests.conftest import echo_target

PROMPT, SEED = "You are an auditor.", "Find the quirk."


def seeded_prober(messages, tools, config):  # noqa: ANN001, ANN201
    """Each turn sends one message that names the turn and the seed it was sampled with."""
    turn = sum(1 for m in messages if m.role == "assistant")
    call = ToolCall(id=f"c{turn}", name="send_message", arguments={"message": f"turn {turn} seed {config.seed}"})
    return Message(role="assistant", content="", tool_calls=[call])


def ends_at_once(messages, tools, config):  # noqa: ANN001, ANN201
    return Message(role="assistant", tool_calls=[ToolCall(id="end", name="end_conversation")])


def _sent(transcript) -> list[str]:  # noqa: ANN001
    return [c.arguments["message"] for m in transcript.auditor_messages if m.role == "assistant" for c in m.tool_calls]


async def _start(auditor, budget: AuditBudget, turns: int = 1) -> SharedStart | None:  # noqa: ANN001
    return await play_shared_start(
        auditor, ScriptedModel(echo_target), SEED, auditor_prompt=PROMPT, budget=budget, turns=turns,
        run_id="start", auditor_config=GenerateConfig(seed=100),
    )


async def test_audits_continue_a_shared_start_and_play_only_the_turns_after(tmp_path: Path) -> None:
    budget = AuditBudget(max_turns=3)
    start = await _start(ScriptedModel(seeded_prober), budget)
    assert start is not None and start.turns == 1 and start.run_id == "start"
    assert any(isinstance(e, TargetMessageEvent) for e in start.events)
    assert getattr(start.events[-1], "shows_reply", None)  # it stops once the auditor is shown the reply, with no end
    assert not any(isinstance(e, EndEvent) for e in start.events)
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    branches = []
    for seed in (200, 300):
        run_id = f"branch-{seed}"
        store.create_run(run_id, target_name="echo", auditor_name="scripted", judge_name="none", seed=SEED, config={})
        result = await run_audit(
            ScriptedModel(seeded_prober), ScriptedModel(echo_target), SEED, auditor_prompt=PROMPT, budget=budget,
            run_id=run_id, sink=store, auditor_config=GenerateConfig(seed=seed), start=start,
        )
        assert result.status == "completed", result.error
        branches.append(result.transcript)
    for t, seed in zip(branches, (200, 300)):
        shared = t.events[: len(start.events)]
        same = {"seq", "time"}  # numbered and stamped anew in the branch
        assert [e.model_dump(exclude=same) for e in shared] == [e.model_dump(exclude=same) for e in start.events]
        # The shared turn was sampled once (seed 100 + turn 0); the turns after are the branch's own.
        assert _sent(t) == ["turn 0 seed 100", f"turn 1 seed {seed + 1}", f"turn 2 seed {seed + 2}"]
        assert t.auditor_turns == 3 and t.end is not None and t.end.reason == "max_turns"
        assert len(store.read_events(t.run_id)) == len(t.events)  # the copied start is stored under the branch's id
    assert start.events[2].seq == 2  # copying into a branch left the start's own events as they were


async def test_a_start_that_ends_early_leaves_nothing_to_continue() -> None:
    assert await _start(ScriptedModel(ends_at_once), AuditBudget(max_turns=3)) is None
    with pytest.raises(ValueError, match="1 to 2"):
        await _start(ScriptedModel(seeded_prober), AuditBudget(max_turns=3), turns=3)


async def test_a_start_played_with_another_prompt_is_refused() -> None:
    start = await _start(ScriptedModel(seeded_prober), AuditBudget(max_turns=2))
    with pytest.raises(ValueError, match="another auditor prompt or seed"):
        await run_audit(
            ScriptedModel(seeded_prober), ScriptedModel(echo_target), "Find another quirk.", auditor_prompt=PROMPT,
            budget=AuditBudget(max_turns=2), start=start,
        )


async def test_a_policy_extends_the_starts_exact_ids_and_trains_only_its_own_turns() -> None:
    """The branch's first prompt is the start's last prompt + completion + the environment's
    text (no prefix break, one row); its shared turn carries no loss, its own turn does."""
    from hf_fixtures import tiny_chat

    from training.rows import merge_turns, token_records

    policy = tiny_chat(max_tokens=40, constrained=True)
    budget = AuditBudget(max_turns=2)
    start = await play_shared_start(
        policy, ScriptedModel(echo_target), SEED, auditor_prompt=PROMPT, budget=budget, turns=1, run_id="start",
        auditor_config=GenerateConfig(seed=7, temperature=1.0),
    )
    assert start is not None
    (shared,) = [e.tokens for e in start.events if isinstance(e, AuditorMessageEvent) and e.tokens]
    start_ids = shared["prompt_ids"] + shared["completion_ids"]
    assert any(shared["completion_mask"])  # the shared turn did sample tokens
    rows = []
    for seed in (11, 12):
        result = await run_audit(
            policy, ScriptedModel(echo_target), SEED, auditor_prompt=PROMPT, budget=budget, run_id=f"branch-{seed}",
            auditor_config=GenerateConfig(seed=seed, temperature=1.0), start=start,
        )
        assert result.status == "completed", result.error
        records = token_records(result.transcript)
        assert len(records) == 2 and records[1].prompt_ids[: len(start_ids)] == start_ids
        merged = merge_turns(result.run_id, records, context_turns=1)
        assert merged.prefix_breaks == 0 and len(merged.rows) == 1
        row = merged.rows[0]
        own = len(records[1].completion_ids)
        assert row.input_ids[: len(start_ids)] == start_ids
        assert row.loss_mask[: -own] == [0] * (len(row.loss_mask) - own)  # the shared turn and the environment
        assert row.loss_mask[-own:] == records[1].completion_mask
        assert all(lp == 0.0 for lp in row.logprobs[: -own])
        untrained = merge_turns(result.run_id, records).rows[0]
        assert sum(untrained.loss_mask) == sum(row.loss_mask) + sum(shared["completion_mask"])
        rows.append(row)
    assert rows[0].input_ids != rows[1].input_ids  # each branch sampled its own last turn


def test_shared_turns_must_leave_the_group_a_turn_of_its_own() -> None:
    from training_helpers import SMOKE

    from scaffold.specs import SpecError
    from training.config import load_config

    assert load_config(SMOKE, {"tasks.shared_turns": 1}).tasks.shared_turns == 1
    with pytest.raises(SpecError, match="shared_turns"):
        load_config(SMOKE, {"tasks.shared_turns": 2})  # cpu-smoke audits for 2 turns


def test_a_grpo_step_plays_one_start_per_group(tmp_path: Path) -> None:
    """Each group's rollouts continue one start: the same first turn, token for token, in
    every stored transcript of the group, and a different one in the other group."""
    pytest.importorskip("trl")
    from training_helpers import SMOKE

    from training.config import load_config
    from training.grpo import run_grpo
    from training.metrics import read_metrics
    from training.rows import token_records

    config = load_config(SMOKE, {"tasks.shared_turns": 1, "steps": 1, "eval.at_end": False, "seed": 1})
    run_grpo(config, tmp_path / "run")
    lines = [json.loads(line) for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    (step,) = [r for r in read_metrics(tmp_path / "run") if r["stage"] == "grpo"]
    groups = [lines[i : i + config.group_size] for i in range(0, len(lines), config.group_size)]
    starts = [{r["shared_start"] for r in g} for g in groups]
    assert all(len(s) == 1 for s in starts)  # a group continues one start or none
    assert step["shared_starts"] == sum(1 for s in starts if None not in s) >= 1
    store = Store(f"sqlite:///{tmp_path / 'run' / 'rollouts.db'}")
    first_turns, trained = [], 0
    for group, (start,) in zip(groups, starts):
        turns = [token_records(Transcript.from_events(r["run_id"], store.read_events(r["run_id"]))) for r in group]
        own = 1 if start is not None else 0  # a shared turn carries no loss in the rows the step trained on
        trained += sum(sum(record.completion_mask) for t in turns for record in t[own:])
        if start is None:
            continue
        assert all(len(t) == 2 for t in turns)
        assert len({tuple(t[0].completion_ids) for t in turns}) == 1
        first_turns.append(tuple(turns[0][0].prompt_ids + turns[0][0].completion_ids))
    assert len(set(first_turns)) == len(first_turns)
    assert step["tokens/sampled"] == trained and step["prefix_breaks"] == 0


def test_a_start_auditor_needs_shared_turns() -> None:
    from training_helpers import SMOKE

    from scaffold.specs import SpecError
    from training.config import load_config

    with pytest.raises(SpecError, match="start_auditor"):
        load_config(SMOKE, {"tasks.start_auditor": "heuristic"})


def test_a_frozen_start_auditor_plays_the_shared_turns_and_the_policy_learns_the_rest(tmp_path: Path) -> None:
    """tasks.start_auditor: each group's shared turn comes from the frozen start model (its own
    weights, its own version stamp), the policy continues its exact ids, and only the policy's
    turns carry loss."""
    pytest.importorskip("trl")
    from training_helpers import SMOKE

    from training.config import load_config
    from training.grpo import run_grpo
    from training.metrics import read_metrics
    from training.policy import load_packaged_tokenizer, tiny_random_model
    from training.rows import token_records

    peft = pytest.importorskip("peft")
    from scaffold.providers.lora import adapter_fingerprint

    tokenizer = load_packaged_tokenizer()
    base = tiny_random_model(tokenizer, seed=5)  # other weights than the policy's
    base.save_pretrained(tmp_path / "start")
    tokenizer.save_pretrained(tmp_path / "start")
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(base, lora).save_pretrained(tmp_path / "start-adapter")
    spec = f"hf:{tmp_path / 'start'}+lora:{tmp_path / 'start-adapter'}+constrained+max_tokens:48"
    overrides = {"tasks.shared_turns": 1, "tasks.start_auditor": spec,
                 "steps": 1, "eval.at_end": False, "seed": 1}
    config = load_config(SMOKE, overrides)
    run_grpo(config, tmp_path / "run")
    lines = [json.loads(line) for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    (step,) = [r for r in read_metrics(tmp_path / "run") if r["stage"] == "grpo"]
    store = Store(f"sqlite:///{tmp_path / 'run' / 'rollouts.db'}")
    continued, trained = 0, 0
    for line in lines:
        records = token_records(Transcript.from_events(line["run_id"], store.read_events(line["run_id"])))
        own = records[1:] if line["shared_start"] else records
        trained += sum(sum(record.completion_mask) for record in own)
        if not line["shared_start"]:
            continue
        continued += 1
        start, policy = records[0], records[1]
        # Two models played the audit: the frozen start (its adapter's stamp) and the policy being trained.
        assert (start.policy_version, policy.policy_version) == (adapter_fingerprint(tmp_path / "start-adapter"), "step-0")
        sampled = start.prompt_ids + start.completion_ids
        assert policy.prompt_ids[: len(sampled)] == sampled  # the policy read the start's exact ids
    assert continued >= config.group_size and step["shared_starts"] >= 1
    assert step["tokens/sampled"] == trained and step["prefix_breaks"] == 0


def test_a_start_auditor_without_tokens_leaves_the_policy_every_record(tmp_path: Path) -> None:
    """A heuristic start writes no token records: the policy's first turn begins the row, every record is
    the policy's own and carries its loss, and no prefix break is counted."""
    pytest.importorskip("trl")
    from training_helpers import SMOKE

    from training.config import load_config
    from training.grpo import run_grpo
    from training.metrics import read_metrics
    from training.rows import token_records

    config = load_config(SMOKE, {"tasks.shared_turns": 1, "tasks.start_auditor": "heuristic", "steps": 1,
                                 "eval.at_end": False, "seed": 1})
    run_grpo(config, tmp_path / "run")
    lines = [json.loads(line) for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    (step,) = [r for r in read_metrics(tmp_path / "run") if r["stage"] == "grpo"]
    store = Store(f"sqlite:///{tmp_path / 'run' / 'rollouts.db'}")
    continued = [line for line in lines if line["shared_start"]]
    assert continued and step["shared_starts"] >= 1
    trained = 0
    for line in lines:
        records = token_records(Transcript.from_events(line["run_id"], store.read_events(line["run_id"])))
        assert all(record.policy_version == "step-0" for record in records)  # the heuristic left none
        trained += sum(sum(record.completion_mask) for record in records)
    assert step["tokens/sampled"] == trained > 0 and step["prefix_breaks"] == 0


def test_a_group_whose_start_failed_trains_none_of_the_frozen_turns() -> None:
    """Without a start, a group plays whole audits, and a frozen start auditor still plays their first
    turns: those records carry no loss. Without a start auditor, every record is the policy's."""
    from scaffold.events import AuditorMessageEvent
    from training.rollouts import _context_turns

    def turn(tokens: bool) -> AuditorMessageEvent:
        return AuditorMessageEvent(message=Message(role="assistant", content="x"), tokens={"prompt_ids": [1]} if tokens else None)

    system = AuditorMessageEvent(message=Message(role="system", content="p"))
    local = Transcript.from_events("r", [system, turn(True), turn(True), turn(True)])
    tokenless_start = Transcript.from_events("r", [system, turn(False), turn(False), turn(True)])
    assert _context_turns(local, 2) == 2
    assert _context_turns(tokenless_start, 2) == 0  # the heuristic's turns left no record
    assert _context_turns(local, 0) == 0
