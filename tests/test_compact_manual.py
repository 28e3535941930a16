"""The compact manual (issue 16, speed): the same scaffold and tools, with the system
prompt and the tools section in at most 600 SmolLM2 tokens, for small local policies."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hf_fixtures import packaged_tokenizer, tiny_chat

from auditor.prompts import auditor_system_prompt, resolve_manual
from scaffold.messages import GenerateConfig, Message
from scaffold.providers.scripted import ScriptedModel
from scaffold.providers.text_tools import render_messages, signature_line
from scaffold.run import run_audit
from scaffold.state import AuditBudget
from scaffold.tools import AUDITOR_TOOLS
from tests.conftest import echo_target

DEFINITIONS = [tool.definition for tool in AUDITOR_TOOLS.values()]
COMPACT_LIMIT = 600


def _system_tokens(manual: str) -> int:
    """SmolLM2 tokens of the system message a local policy reads (prompt + tools section)."""
    tools = [d.brief() for d in DEFINITIONS] if manual == "compact" else DEFINITIONS
    prompt = auditor_system_prompt(DEFINITIONS, 8, manual)  # type: ignore[arg-type]
    chat = render_messages([Message(role="system", content=prompt), Message(role="user", content="go")], tools)
    return len(packaged_tokenizer()(chat[0]["content"])["input_ids"])


def test_the_compact_manual_fits_in_600_tokens_and_the_full_one_does_not() -> None:
    compact, full = _system_tokens("compact"), _system_tokens("full")
    assert compact <= COMPACT_LIMIT < full, (compact, full)


def test_the_compact_manual_names_every_tool_with_its_arguments_once() -> None:
    prompt = auditor_system_prompt(DEFINITIONS, 8, "compact")
    tools = [d.brief() for d in DEFINITIONS]
    content = render_messages([Message(role="system", content=prompt)], tools)[0]["content"]
    for tool in tools:
        assert content.count(signature_line(tool)) == 1, tool.name
    assert "<tool_call>" in content  # the call syntax is still taught


def test_local_policies_get_the_compact_manual_and_api_auditors_the_full_one() -> None:
    assert resolve_manual("auto", "policy:auditor@step-3") == "compact"
    assert resolve_manual("auto", "hf:smollm2-135m+constrained") == "compact"
    for spec in ("heuristic", "anthropic:claude-sonnet-4-5", "openai:gpt-4.1", "vllm:auditor"):
        assert resolve_manual("auto", spec) == "full", spec
    assert resolve_manual("full", "policy:auditor") == "full"


def test_a_model_spec_file_gets_the_manual_of_its_provider(tmp_path: Path) -> None:
    """A YAML auditor spec (the only way to reach max_batch_size, say) is read for its provider."""
    local, api = tmp_path / "local.yaml", tmp_path / "api.yaml"
    local.write_text("provider: hf\nmodel: smollm2-135m\nextra: {constrained: true, max_batch_size: 32}\n")
    api.write_text("provider: anthropic\nmodel: claude-sonnet-4-5\n")
    assert resolve_manual("auto", str(local)) == "compact"
    assert resolve_manual("auto", str(api)) == "full"
    assert resolve_manual("auto", str(tmp_path / "missing.yaml")) == "full"  # the spec check reports it


def test_an_audit_with_brief_tools_sends_the_compact_prompt_to_the_policy() -> None:
    """Through the scaffold: the first turn's prompt ids are the compact manual plus the seed."""
    prompt = auditor_system_prompt(DEFINITIONS, 1, "compact")
    lengths = {}
    for brief in (True, False):
        result = asyncio.run(
            run_audit(
                tiny_chat(max_tokens=120, constrained=True),
                ScriptedModel(echo_target),
                "Find the quirk.",
                auditor_prompt=prompt,
                budget=AuditBudget(max_turns=1),
                auditor_config=GenerateConfig(temperature=1.0, seed=0),
                brief_tools=brief,
            )
        )
        turn = next(e for e in result.transcript.events if getattr(e, "tokens", None))
        lengths[brief] = len(turn.tokens["prompt_ids"])  # type: ignore[attr-defined]
    assert lengths[True] <= COMPACT_LIMIT + 60 < lengths[False], lengths  # 60: the seed and chat headers


def test_sft_rows_teach_the_compact_prompt_the_policy_reads_in_rollouts() -> None:
    """A transcript recorded with the full manual (as the heuristic's are) becomes an SFT row
    whose first prompt is token for token what a compact-manual rollout showed the policy."""
    from scaffold.providers.token_prompts import PromptBuilder
    from training.sft import sft_row

    result = asyncio.run(
        run_audit(
            tiny_chat(max_tokens=60, constrained=True),
            ScriptedModel(echo_target),
            "Find the quirk.",
            auditor_prompt=auditor_system_prompt(DEFINITIONS, 2, "compact"),
            budget=AuditBudget(max_turns=2),
            auditor_config=GenerateConfig(temperature=1.0, seed=1),
            brief_tools=True,
        )
    )
    transcript = result.transcript
    seen = next(e for e in transcript.events if getattr(e, "tokens", None)).tokens["prompt_ids"]  # type: ignore[attr-defined]
    full = auditor_system_prompt(DEFINITIONS, 2, "full")
    transcript.auditor_messages[0] = transcript.auditor_messages[0].model_copy(update={"content": full})
    builder = PromptBuilder(packaged_tokenizer())
    compact_row = sft_row(transcript, builder, 10_000, "compact", 2)
    full_row = sft_row(transcript, builder, 10_000, "full", 2)
    assert compact_row is not None and full_row is not None
    assert compact_row.input_ids[: len(seen)] == seen
    assert full_row.input_ids[: len(seen)] != seen and len(full_row.input_ids) > len(compact_row.input_ids) + 1000


def test_audit_run_takes_the_manual_from_the_command_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "audit.cli", "run", "--target", str(root / "targets/examples/flattery.yaml"),
           "--judge", "lexical", "--max-turns", "2", "--manual", "compact", "--json"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    transcript = json.loads(Path(json.loads(done.stdout)["transcript"]).read_text())
    system = transcript["events"][0]["message"]["content"]
    assert system == auditor_system_prompt(DEFINITIONS, 2, "compact")
    bad = subprocess.run([*cmd[:-3], "--manual", "tiny"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "tiny" in bad.stderr
