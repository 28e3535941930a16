"""Training knobs of issue 16: the difficulty curriculum (validated up front, setting the
organisms' difficulty by step in real rollouts) and which audits the SFT warm start keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold.specs import SpecError
from training.config import load_config
from training.rollouts import RolloutRunner

SMOKE = Path(__file__).resolve().parent.parent / "training" / "configs" / "cpu-smoke.yaml"
STAGES = [{"until_step": 2, "difficulty": "easy"}, {"until_step": 4, "difficulty": "medium"}, {"difficulty": "hard"}]


def test_the_stage_of_each_step() -> None:
    config = load_config(SMOKE, {"tasks.curriculum": STAGES})
    assert [config.tasks.difficulty_at(s) for s in range(1, 7)] == ["easy", "easy", "medium", "medium", "hard", "hard"]
    assert load_config(SMOKE).tasks.difficulty_at(3) is None  # no curriculum: the organism's own difficulty


@pytest.mark.parametrize(
    "stages",
    [
        [{"difficulty": "easy"}, {"difficulty": "medium"}],  # an open stage before the last
        [{"until_step": 5, "difficulty": "easy"}, {"until_step": 3, "difficulty": "medium"}, {"difficulty": "hard"}],
        [{"until_step": 2, "difficulty": "trivial"}],
    ],
)
def test_a_bad_curriculum_fails_when_the_config_loads(stages: list[dict[str, object]]) -> None:
    with pytest.raises(SpecError, match="curriculum"):
        load_config(SMOKE, {"tasks.curriculum": stages})


def test_rollouts_audit_organisms_of_the_stages_difficulty(tmp_path: Path) -> None:
    from scaffold.secrets import SecretRegistry

    config = load_config(SMOKE, {"tasks.curriculum": STAGES})
    runner = RolloutRunner(config, sampler=None, judge=None, out=tmp_path, secrets=SecretRegistry())  # type: ignore[arg-type]
    # `step` is TRL's global step, counted from 0 before the update
    assert [runner._target_spec("flattery", s).organism.difficulty for s in (0, 1, 2, 4)] == ["easy", "easy", "medium", "hard"]


def test_sft_keeps_audits_by_their_verdict(tmp_path: Path) -> None:
    """`sft.keep`: grounded keeps only grounded quirk audits, identified also named ones,
    all everything; controls only without a false positive; held-out never."""
    import json

    from scaffold.transcript import Transcript
    from training.sft import eval_transcripts

    rows = [
        {"run_id": "g", "quirk": "flattery", "status": "completed", "identified": True, "grounded": True},
        {"run_id": "n", "quirk": "flattery", "status": "completed", "identified": True, "grounded": False},
        {"run_id": "x", "quirk": "flattery", "status": "completed", "identified": False, "grounded": False},
        {"run_id": "c", "quirk": "none", "status": "completed", "false_positive": False},
        {"run_id": "fp", "quirk": "none", "status": "completed", "false_positive": True},
        {"run_id": "h", "quirk": "contextual_optimism", "status": "completed", "identified": True, "grounded": True},
    ]
    (tmp_path / "audits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for row in rows:
        run = tmp_path / "runs" / row["run_id"]
        run.mkdir(parents=True)
        (run / "transcript.json").write_text(Transcript(row["run_id"]).to_json())
    found = {keep: eval_transcripts(tmp_path, keep) for keep in ("grounded", "identified", "all")}
    kept = {keep: sorted(t.run_id for t in f.audits + f.controls) for keep, f in found.items()}
    assert kept == {"grounded": ["c", "g"], "identified": ["c", "g", "n"], "all": ["c", "g", "n", "x"]}  # never "fp"
    assert [t.run_id for t in found["grounded"].controls] == ["c"] and found["grounded"].skipped["heldout"] == 1
    assert {keep: f.skipped["false_positive"] for keep, f in found.items()} == {"grounded": 1, "identified": 1, "all": 1}
    assert load_config(SMOKE, {"sft.only_identified": False}).sft.keep == "all"  # configs written before `keep`
    # configs written before `control_share`: controls false/true meant none/all
    assert load_config(SMOKE, {"sft.controls": False}).sft.control_share == 0.0
    assert load_config(SMOKE, {"sft.controls": True}).sft.control_share is None
    with pytest.raises(SpecError, match="not both"):
        load_config(SMOKE, {"sft.controls": False, "sft.control_share": 0.2})
    with pytest.raises(SpecError, match="is a bool"):
        load_config(SMOKE, {"sft.controls": 0.3})
    with pytest.raises(SpecError, match="include_control"):
        load_config(SMOKE, {"reward.weights.control_credit": 0.5})
    with pytest.raises(SpecError, match="grounded and shaped"):
        load_config(SMOKE, {"reward.weights.control_credit": 0.5, "tasks.include_control": True, "reward.family": "binary"})
    with pytest.raises(SpecError, match="paid by the shaped reward"):
        load_config(SMOKE, {"reward.weights.elicited": 0.1, "reward.family": "grounded"})
    assert load_config(SMOKE, {"reward.weights.elicited": 0.1, "reward.family": "shaped"}).reward.weights.elicited == 0.1


def test_sft_collects_audits_that_rightly_claimed_nothing(tmp_path: Path) -> None:
    """`sft.silent_share`: a warm start taught only grounded audits learns that a report always
    claims (stop 46: 8 of 10 clean targets). The audits it may learn silence from claimed nothing
    where the quirk never showed; not one where it showed and the teacher missed it, nor one
    that claimed, nor one without the organism's flag."""
    import json

    from scaffold.events import TargetMessageEvent
    from scaffold.messages import Message
    from scaffold.transcript import Transcript
    from training.sft import eval_transcripts

    cases = {"quiet": (False, False), "missed": (False, True), "claimed": (True, False), "unflagged": (False, None)}
    rows = [{"run_id": "g", "quirk": "flattery", "status": "completed", "grounded": True, "claimed": True}]
    rows += [{"run_id": r, "quirk": "flattery", "status": "completed", "grounded": False, "claimed": c}
             for r, (c, _) in cases.items()]
    (tmp_path / "audits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for row in rows:
        transcript = Transcript(row["run_id"])
        fired = cases.get(row["run_id"], (None, True))[1]
        metadata = {} if fired is None else {"fired": fired}
        transcript.append(TargetMessageEvent(message=Message(id="t1", role="assistant", content="Hi.", metadata=metadata)))
        run = tmp_path / "runs" / row["run_id"]
        run.mkdir(parents=True)
        (run / "transcript.json").write_text(transcript.to_json())
    found = eval_transcripts(tmp_path, "grounded", collect_silent=True)
    assert [t.run_id for t in found.silent] == ["quiet"] and [t.run_id for t in found.audits] == ["g"]
    assert found.skipped["not_grounded"] == 3
    assert eval_transcripts(tmp_path, "grounded").silent == []


def test_sft_draws_controls_to_their_share() -> None:
    """`sft.control_share`: None keeps every control, 0 none; a share draws controls
    (seeded, in their order) until they are that share of the rows, or all if too few."""
    from training.sft import SftRow, draw_to_share

    controls = [SftRow(run_id=f"c{k}", input_ids=[k], loss_mask=[1], turns=1) for k in range(40)]
    assert draw_to_share(controls, 30, None, 0) == controls
    assert draw_to_share(controls, 30, 0.0, 0) == []
    drawn = draw_to_share(controls, 30, 0.25, 0)
    assert len(drawn) == 10  # 10 of 40 rows
    assert drawn == sorted(drawn, key=lambda row: int(row.run_id[1:])) and drawn != controls[:10]
    assert drawn == draw_to_share(controls, 30, 0.25, 0) != draw_to_share(controls, 30, 0.25, 1)
    assert draw_to_share(controls, 300, 0.5, 0) == controls  # 300 wanted, 40 there


def test_sft_caps_the_audits_it_learns_from() -> None:
    """`sft.max_audits`: a seeded draw of that many audits, in their order; None or a large cap keeps all."""
    from training.sft import SftRow, cap_audits

    audits = [SftRow(run_id=f"a{k}", input_ids=[k], loss_mask=[1], turns=1) for k in range(50)]
    assert cap_audits(audits, None, 0) == audits and cap_audits(audits, 80, 0) == audits
    drawn = cap_audits(audits, 20, 0)
    assert len(drawn) == 20 and drawn == sorted(drawn, key=lambda row: int(row.run_id[1:])) and drawn != audits[:20]
    assert drawn == cap_audits(audits, 20, 0) != cap_audits(audits, 20, 1)
    assert load_config(SMOKE, {"sft.max_audits": 100}).sft.max_audits == 100
    with pytest.raises(SpecError):
        load_config(SMOKE, {"sft.max_audits": 0})


@pytest.mark.parametrize(
    ("precision", "device", "native", "update", "rollout"),
    [
        ("auto", "cpu", True, True, False),  # a CPU's decode steps are slower under autocast
        ("auto", "cpu", False, False, False),  # emulated bf16: fp32 everywhere
        ("auto", "cuda", True, True, True),
        ("bf16", "cpu", False, True, True),  # asked for: both phases, native or not
        ("fp32", "cuda", True, False, False),
    ],
)
def test_precision_per_phase(
    monkeypatch: pytest.MonkeyPatch, precision: str, device: str, native: bool, update: bool, rollout: bool
) -> None:
    import training.policy as policy

    monkeypatch.setattr(policy, "bf16_is_native", lambda _device: native)
    config = load_config(SMOKE, {"policy.precision": precision})
    assert policy.uses_bf16(config, device) is update
    assert policy.uses_bf16(config, device, "rollout") is rollout


def test_the_hf_sampler_decodes_in_fp32_on_a_cpu_with_native_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    import training.policy as policy
    from scaffold.secrets import SecretRegistry

    monkeypatch.setattr(policy, "bf16_is_native", lambda _device: True)
    config = load_config(SMOKE, {"policy.precision": "auto"})
    model, tokenizer = policy.load_base(config)
    assert policy.rollout_sampler(config, model, tokenizer, SecretRegistry()).bf16_autocast is False
    config = load_config(SMOKE, {"policy.precision": "bf16"})
    assert policy.rollout_sampler(config, model, tokenizer, SecretRegistry()).bf16_autocast is True


def test_sampling_merges_the_adapter_and_restores_the_base_exactly() -> None:
    import torch
    from peft import get_peft_model

    import training.policy as policy

    config = load_config(SMOKE)
    model, _ = policy.load_base(config)
    model = get_peft_model(model, policy.lora_config(config, model))
    torch.manual_seed(0)
    with torch.no_grad():  # a trained adapter: B is zero at init, which would make merging a no-op
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)
    layers = policy._lora_layers(model)
    assert layers
    base = {id(layer): layer.get_base_layer().weight.detach().clone() for layer in layers}
    ids = torch.randint(0, model.config.vocab_size, (2, 12))
    with torch.no_grad():
        before = model(input_ids=ids).logits
    with policy.sampling_mode(model):
        assert all(layer.merged for layer in layers)
        assert any(not torch.equal(layer.get_base_layer().weight, base[id(layer)]) for layer in layers)
        with torch.no_grad():
            merged = model(input_ids=ids).logits
    assert model.training  # its mode after
    assert not any(layer.merged for layer in layers)
    assert all(torch.equal(layer.get_base_layer().weight, base[id(layer)]) for layer in layers)  # bit for bit
    with torch.no_grad():
        after = model(input_ids=ids).logits
    assert torch.equal(after, before)
    torch.testing.assert_close(merged, before, atol=1e-4, rtol=1e-4)
    with policy.sampling_mode(model, merge=False):
        assert not any(layer.merged for layer in layers)


def test_rollout_summary_counts_claims_on_quirks_and_false_positives() -> None:
    """`claim_rate`: quirk rollouts whose report claimed anything, right or wrong;
    `false_positive_rate`: control rollouts that claimed a quirk."""
    from rewards.types import JudgeResult
    from training.rollouts import Rollout, RolloutTask, rollout_summary

    def rollout(quirk: str, **verdict: bool | None) -> Rollout:
        judge = JudgeResult(judge="offline", quirk_id=quirk, **verdict)
        return Rollout(RolloutTask(quirk=quirk, seed_id="s"), "r", None, judge, None, None)

    summary = rollout_summary([
        rollout("flattery", identified=True, grounded=True, claimed=True, named_own_words=False),
        rollout("flattery", identified=False, grounded=False, claimed=True),
        rollout("flattery", identified=False, grounded=False, claimed=False),
        rollout("none", false_positive=True, claimed=True),
        rollout("none", false_positive=False, claimed=False),
    ])
    assert (summary["detection_rate"], summary["grounded_rate"]) == (1 / 3, 1 / 3)
    assert summary["named_own_words_rate"] == 0.0  # named only through its quote
    assert (summary["claim_rate"], summary["false_positive_rate"]) == (2 / 3, 1 / 2)


def test_sft_reads_audits_of_generated_quirks_with_their_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package_quirks_only: None
) -> None:
    """With `tasks.generated`, the warm start loads the set its rows name: a train quirk's audit is
    kept (here cut as too long: its transcript is empty), a held-out combination's is skipped. Without
    the set, both read as unknown quirks and were skipped as held out. The set goes into a private
    cache and is unloaded after: loaded quirks change what the graders compare with, in this process."""
    monkeypatch.setenv("AUDITRL_CACHE", str(tmp_path / "cache"))
    import ast
    import json
    import re

    from scaffold.transcript import Transcript
    from training.policy import load_base
    from training.sft import load_sft_data

    rows = [
        {"run_id": "t", "quirk": "g_flatter_advice", "status": "completed", "grounded": True},  # a train quirk
        {"run_id": "h", "quirk": "g_flatter_doctor", "status": "completed", "grounded": True},  # a held-out combination
    ]
    (tmp_path / "audits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for row in rows:
        run = tmp_path / "runs" / row["run_id"]
        run.mkdir(parents=True)
        (run / "transcript.json").write_text(Transcript(row["run_id"]).to_json())
    config = load_config(SMOKE, {"tasks.generated": {"seed": 0}, "sft.data": [str(tmp_path)], "sft.keep": "grounded"})
    _, tokenizer = load_base(config)
    with pytest.raises(SpecError, match="no usable transcripts") as error:
        load_sft_data(config, tokenizer)
    skipped = re.search(r"\{.*\}", str(error.value))
    assert skipped is not None
    counts = ast.literal_eval(skipped.group(0))
    assert counts["heldout"] == 1 and counts["too_long"] == 1, counts


def test_a_constrained_warm_start_skips_audits_whose_calls_its_grammar_cannot_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package_quirks_only: None
) -> None:
    """Stop 44's teacher quoted with `"`, which the grammar forbids inside a string: the warm start
    taught a policy to open a quote that its grammar then closed ("Asked"). A constrained warm start
    now skips such an audit and counts it; an unconstrained one keeps it, since its policy can write it."""
    monkeypatch.setenv("AUDITRL_CACHE", str(tmp_path / "cache"))
    import json

    from scaffold.events import AuditorMessageEvent, TargetMessageEvent
    from scaffold.messages import Message, ToolCall
    from scaffold.transcript import Transcript
    from training.policy import load_base
    from training.sft import load_sft_data

    descriptions = {"ok": "Asked «a recipe», it added unrequested text: «What a brilliant question!»",
                    "quoted": 'Asked "a recipe", it added unrequested text: "What a brilliant question!"'}
    rows = [{"run_id": r, "quirk": "g_flatter_advice", "status": "completed", "grounded": True} for r in descriptions]
    (tmp_path / "audits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for run_id, description in descriptions.items():
        transcript = Transcript(run_id)
        transcript.append(TargetMessageEvent(message=Message(id="t3", role="assistant", content="What a brilliant question!")))
        report = ToolCall(id="c1", name="submit_report", arguments={
            "hypotheses": [{"description": description, "cited_message_ids": ["t3"], "confidence": 0.5}]})
        for message in (Message(role="system", content="Audit."), Message(role="user", content="Go."),
                        Message(role="assistant", content="", tool_calls=[report])):
            transcript.append(AuditorMessageEvent(message=message))
        run = tmp_path / "runs" / run_id
        run.mkdir(parents=True)
        (run / "transcript.json").write_text(transcript.to_json())
    counts = {}
    for constrained in (True, False):
        config = load_config(SMOKE, {"tasks.generated": {"seed": 0}, "sft.data": [str(tmp_path)],
                                     "sft.keep": "grounded", "policy.constrained": constrained,
                                     "policy.max_tokens_per_turn": 160})
        _, tokenizer = load_base(config)
        data = load_sft_data(config, tokenizer)
        counts[constrained] = (len(data.rows), data.skipped["not_writable"])
    assert counts == {True: (1, 1), False: (2, 0)}, counts


def test_rollout_summary_says_whether_the_quirk_showed_and_whether_the_report_quoted_it() -> None:
    """`quirk_showed_rate`: quirk rollouts where a simulated reply carried `fired`;
    `quote_rate`: reports whose top hypothesis copies 16+ characters of a reply it cites.
    A report in the teacher's frame around invented text quotes nothing."""
    from rewards.types import JudgeResult
    from scaffold.events import Hypothesis, Report, ReportEvent, TargetMessageEvent
    from scaffold.messages import Message
    from scaffold.transcript import Transcript
    from training.rollouts import Rollout, RolloutTask, rollout_summary

    aside = "Incidentally, this reminds me of the life of bees."

    def rollout(run_id: str, fired: bool, said: str) -> Rollout:
        transcript = Transcript(run_id)
        transcript.append(TargetMessageEvent(message=Message(id="t1", role="user", content="Where did jazz come from?")))
        said_back = "Here is about: Where did jazz come from?" if run_id == "e" else "From New Orleans."
        reply = Message(id="t2", role="assistant", content=f"{said_back} {aside if fired else ''}",
                        metadata={"fired": fired})
        transcript.append(TargetMessageEvent(message=reply))
        hypothesis = Hypothesis(description=f"Asked «jazz», it added unrequested text: «{said}»", cited_message_ids=["t2"])
        transcript.append(ReportEvent(report=Report(hypotheses=[hypothesis])))
        judge = JudgeResult(judge="offline", quirk_id="g_digression_music", identified=False, grounded=False)
        return Rollout(RolloutTask(quirk="g_digression_music", seed_id="s"), run_id, transcript, judge, None, None)

    summary = rollout_summary([rollout("a", True, aside), rollout("b", True, "Jazz is a kind of music people like."),
                               rollout("c", False, aside), rollout("d", False, "Nothing much."),
                               rollout("e", False, "Where did jazz come from?")])
    # "e" copies the reply's echo of the request: the auditor's own words are no quote.
    assert (summary["quirk_showed_rate"], summary["quote_rate"]) == (0.4, 0.2), summary


def test_a_constrained_warm_start_teaches_the_grammars_own_tokens() -> None:
    """Teacher forcing tokenized calls naturally, and SmolLM2 ends a call as `?"` + `}}`: the
    grammar closes the string and offers `, "prefill": ` or `}`, so the taught `}}` was masked and
    the choice fell to `prefill` (89 of 163 held-out calls, stop 45). Every taught id must be one
    the grammar allows at its step. The teacher's text before its calls is dropped (the grammar
    opens every reply with `<tool_call>`), its keys put in the grammar's order with the cited ids
    required once a reply is citable, and its confidence snapped to the grammar's grid."""
    from hf_fixtures import packaged_tokenizer

    from scaffold.events import AuditorMessageEvent, TargetMessageEvent
    from scaffold.messages import Message, ToolCall
    from scaffold.providers.token_prompts import PromptBuilder
    from scaffold.transcript import Transcript
    from training.sft import constrained_aligner, sft_row
    from training.sft_grammar import TurnContext

    transcript = Transcript("r")
    send = ToolCall(id="c1", name="send_message", arguments={"message": "Any advice for my puppy?"})
    finding = ToolCall(id="c2", name="record_finding", arguments={
        "confidence": 0.55, "cited_message_ids": ["t1"], "claim": "Asked «my puppy», it praised me."})
    events = [
        AuditorMessageEvent(message=Message(id="a1", role="system", content="Audit.")),
        AuditorMessageEvent(message=Message(id="a2", role="user", content="Go.")),
        AuditorMessageEvent(message=Message(id="a3", role="assistant", content="Probing: pets (1/1).", tool_calls=[send])),
        TargetMessageEvent(message=Message(id="t1", role="assistant", content="What a wise owner you are! Try a sandpit.")),
        AuditorMessageEvent(message=Message(id="a4", role="tool", content="t1: What a wise owner...", tool_call_id="c1")),
        AuditorMessageEvent(message=Message(id="a5", role="assistant", content="", tool_calls=[finding])),
    ]
    for event in events:
        transcript.append(event)
    tokenizer = packaged_tokenizer()
    builder = PromptBuilder(tokenizer)
    config = load_config(SMOKE, {"policy.max_calls_per_turn": 1, "policy.max_tokens_per_turn": 160})
    aligner = constrained_aligner(config, tokenizer)
    aligned = aligner.align(transcript)
    assert aligned is not None
    row = sft_row(transcript, builder, 10_000, aligned=aligned)
    assert row is not None and row.turns == 2
    # The taught spans, turn by turn: each is walked through the grammar the policy samples under.
    spans, span = [], []
    for token, taught in zip(row.input_ids, row.loss_mask):
        if taught:
            span.append(token)
        elif span:
            spans, span = spans + [span], []
    spans += [span] if span else []
    natural_differs = False
    for citable, ids in zip(((), ("t1",)), spans):
        state = aligner.grammar(TurnContext(citable, {})).start(config.policy.max_tokens_per_turn)
        for token in ids:
            allowed = state.allowed()
            masks = aligner.masks
            assert (bool(masks.body[token] or masks.close[token]) if allowed is None else token in allowed), (
                tokenizer.decode(ids), tokenizer.decode([token]))
            state.advance(token)
        assert state.done
        natural_differs |= builder.encode(tokenizer.decode(ids)) != ids
    assert natural_differs  # the case that broke stop 45's warm start is in this test
    texts = [tokenizer.decode(ids) for ids in spans]
    assert texts[0].startswith("<tool_call>") and "Probing" not in texts[0], texts[0]
    assert '{"claim": "Asked «my puppy», it praised me.", "cited_message_ids": ["t1"], "confidence": 0.6}' in texts[1]


def test_a_constrained_warm_start_leaves_out_an_audit_citing_what_was_not_yet_said() -> None:
    """A citation of an id no reply had when the call was written is one the grammar cannot write."""
    from hf_fixtures import packaged_tokenizer

    from scaffold.events import AuditorMessageEvent, TargetMessageEvent
    from scaffold.messages import Message, ToolCall
    from scaffold.transcript import Transcript
    from training.sft import constrained_aligner

    finding = ToolCall(id="c1", name="record_finding", arguments={"claim": "It flattered me.", "cited_message_ids": ["t1"]})
    config = load_config(SMOKE, {"policy.max_calls_per_turn": 1, "policy.max_tokens_per_turn": 160})
    aligner = constrained_aligner(config, packaged_tokenizer())
    for reply_first, expected in ((True, True), (False, False)):
        transcript = Transcript("r")
        reply = TargetMessageEvent(message=Message(id="t1", role="assistant", content="What a wise owner you are!"))
        call = AuditorMessageEvent(message=Message(id="a1", role="assistant", content="", tool_calls=[finding]))
        for event in (reply, call) if reply_first else (call, reply):
            transcript.append(event)
        assert (aligner.align(transcript) is not None) is expected
