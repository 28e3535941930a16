"""The `by_turn` provider: an auditor whose turns are played by different models.

A real audit through the real graph, its auditor two constrained tiny Llamas with different
LoRA adapters, built from a YAML spec the way `--auditor` builds one; then the spec's errors.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor.build import build_auditor
from scaffold.messages import Message
from scaffold.providers.by_turn import ByTurnChatModel, auditor_turn, then
from scaffold.run import run_audit
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.state import AuditBudget
from targets.spec import TargetSpec, build_target

hf = pytest.importorskip("hf_fixtures")
peft = pytest.importorskip("peft")


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny base on disk, and two different LoRA adapters for it."""
    root = tmp_path_factory.mktemp("by_turn")
    hf.tiny_model().save_pretrained(root / "base")
    hf.packaged_tokenizer().save_pretrained(root / "base")
    for seed, name in ((1, "probing"), (2, "report")):
        hf.torch.manual_seed(seed)
        config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        peft.get_peft_model(copy.deepcopy(hf.tiny_model()), config).save_pretrained(root / name)
    return {"root": root, **{name: root / name for name in ("base", "probing", "report")}}


def _spec_file(weights: dict[str, Path], routes: list[dict[str, Any]]) -> str:
    path = weights["root"] / f"auditor-{len(list(weights['root'].glob('auditor-*')))}.yaml"
    path.write_text(yaml.safe_dump({"provider": "by_turn", "model": "probe+report", "extra": {"turns": routes}}))
    return str(path)


def _local(weights: dict[str, Path], adapter: str) -> str:
    return f"hf:{weights['base']}+lora:{weights[adapter]}+constrained+max_tokens:48"


def test_each_turn_of_a_real_audit_is_played_by_its_route(weights: dict[str, Path]) -> None:
    from scaffold.providers.lora import adapter_fingerprint

    # The first route as a short string, the second as an inline spec: both forms --auditor takes.
    report_route = {"provider": "hf", "model": str(weights["base"]), "max_tokens": 48,
                    "extra": {"lora": str(weights["report"]), "constrained": True}}
    auditor = build_auditor(_spec_file(weights, [{"first_turns": 1, "model": _local(weights, "probing")},
                                                 {"model": report_route}]), SecretRegistry())
    assert isinstance(auditor, ByTurnChatModel) and auditor.name == "by_turn:probe+report"
    target = build_target(TargetSpec.model_validate({"name": "f", "organism": {"quirk": "flattery"}}), SecretRegistry())
    result = asyncio.run(run_audit(auditor, target, "find the quirk", auditor_prompt="p",
                                   budget=AuditBudget(max_turns=3)))
    assert result.status == "completed", result.error
    records = [event.tokens for event in result.transcript.events
               if getattr(event, "tokens", None) and event.message.role == "assistant"]
    versions = [record["policy_version"] for record in records]
    probing, report = adapter_fingerprint(weights["probing"]), adapter_fingerprint(weights["report"])
    assert probing != report and versions[0] == probing
    assert len(versions) >= 2 and set(versions[1:]) == {report}
    # The report turn (the last turn's required submit_report) came from the report route.
    assert result.transcript.report is not None and len(versions) == 3
    # Each turn's prompt extends the exact ids of the turn before, across the change of route:
    # the report route reads the probing route's sampled ids, not a re-encoding of its text.
    for before, after in zip(records, records[1:]):
        sampled = before["prompt_ids"] + before["completion_ids"]
        assert after["prompt_ids"][: len(sampled)] == sampled


def test_routes_count_turns_cumulatively() -> None:
    routed = ByTurnChatModel("r", [_Named(), _Named(), _Named()], [2, 1])
    assert [routed.route_for(turn) for turn in range(6)] == [0, 0, 1, 2, 2, 2]
    reply = Message(role="assistant", content="x")
    asked = [Message(role="user", content="a"), reply, Message(role="tool", content="r", tool_call_id="c"), reply]
    assert auditor_turn(asked) == 2 and auditor_turn(asked[:1]) == 0


def test_a_routed_start_is_flattened_so_each_route_hands_its_ids_on() -> None:
    """then(): a frozen start (itself routed: one turn, then the rest of its turns) before the policy."""
    probing, finding, policy = _Named(), _Named(), _Named()
    start = ByTurnChatModel("start", [probing, finding], [1])
    routed = then(start, 2, policy)
    assert routed.models == (probing, finding, policy)  # no nested by_turn model, whose tokenizer none can read
    assert [routed.route_for(turn) for turn in range(4)] == [0, 1, 2, 2]
    assert [then(probing, 2, policy).route_for(turn) for turn in range(3)] == [0, 0, 1]
    with pytest.raises(ValueError, match="cannot play only 1"):
        then(start, 1, policy)


class _Named:
    name, supports_prefill = "m", True


class _Recorder(_Named):
    """A token-level model stand-in: records the configs it is called with."""

    def __init__(self, tokenizer: object, tool_role: str = "user") -> None:
        self.tokenizer, self.tool_role, self.configs = tokenizer, tool_role, []

    async def generate(self, messages, tools=(), config=None):  # noqa: ANN001, ANN201
        self.configs.append(config)


def test_a_route_with_another_vocabulary_never_reads_the_previous_routes_ids() -> None:
    """Ids are in the vocabulary of the model that sampled them: a route that reads chats
    differently re-encodes the history; one that reads them alike extends the exact ids."""
    from scaffold.messages import GenerateConfig

    other = copy.deepcopy(hf.packaged_tokenizer())
    other.chat_template = other.chat_template + " "
    same, alike, foreign = (_Recorder(hf.packaged_tokenizer()), _Recorder(copy.deepcopy(hf.packaged_tokenizer())),
                            _Recorder(other))
    routed = ByTurnChatModel("r", [same, alike, foreign], [1, 1])
    reply = Message(role="assistant", content="x")
    config = GenerateConfig(last_turn_ids=(1, 2, 3))
    for turn in range(3):
        asyncio.run(routed.generate([Message(role="user", content="a"), *[reply] * turn], (), config))
    assert alike.configs[0].last_turn_ids == (1, 2, 3)  # same vocabulary and template
    assert foreign.configs[0].last_turn_ids is None
    # The same tokenizer with tool results in another chat role renders the history differently.
    other_role = _Recorder(hf.packaged_tokenizer(), tool_role="tool")
    routed = ByTurnChatModel("r", [_Recorder(hf.packaged_tokenizer()), other_role], [1])
    asyncio.run(routed.generate([Message(role="user", content="a"), reply], (), config))
    assert other_role.configs[0].last_turn_ids is None


@pytest.mark.parametrize(
    ("routes", "needle"),
    [
        ([{"model": "hf:x"}], "turns"),
        ([{"first_turns": 1, "model": "hf:x"}, {"first_turns": 1, "model": "hf:y"}], "leave its first_turns unset"),
        ([{"model": "hf:x"}, {"model": "hf:y"}], "every route but the last needs first_turns"),
        ([{"first_turns": 0, "model": "hf:x"}, {"model": "hf:y"}], "first_turns"),
        ([{"first_turns": 1, "model": "nope"}, {"model": "hf:y"}], "expected 'provider:model'"),
        ([{"first_turns": 1, "model": "missing.yaml"}, {"model": "hf:y"}], "missing.yaml"),
        ([{"first_turns": 1, "model": {"provider": "by_turn", "model": "n", "extra": {}}}, {"model": "hf:y"}],
         "cannot itself be a by_turn model"),
    ],
)
def test_bad_routes_are_refused_with_the_field_named(weights: dict[str, Path], routes: list, needle: str) -> None:
    with pytest.raises(SpecError, match=needle.replace("(", r"\(")):
        build_auditor(_spec_file(weights, routes), SecretRegistry())


def test_a_routed_auditor_with_a_local_route_reads_the_compact_manual(weights: dict[str, Path]) -> None:
    """`--manual auto` resolves the routes: one manual for the audit, compact when any route is
    a local policy (trained on it), full when every route is an API model."""
    from auditor.prompts import resolve_manual

    api = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
    local_then_api = _spec_file(weights, [{"first_turns": 1, "model": _local(weights, "probing")}, {"model": api}])
    assert resolve_manual("auto", local_then_api) == "compact"
    api_then_local_yaml = weights["root"] / "local.yaml"
    api_then_local_yaml.write_text(yaml.safe_dump({"provider": "hf", "model": str(weights["base"])}))
    assert resolve_manual("auto", _spec_file(weights, [{"first_turns": 2, "model": "openai:gpt-5-mini"},
                                                        {"model": str(api_then_local_yaml)}])) == "compact"
    only_api = _spec_file(weights, [{"first_turns": 1, "model": "openai:gpt-5-mini"}, {"model": api}])
    assert resolve_manual("auto", only_api) == "full"
    assert resolve_manual("full", local_then_api) == "full"
