"""Auditor specs: `heuristic`, `heuristic:sampled` (probe order drawn from the audit's seed),
`heuristic:situations` (everyday requests, quoting unrequested text),
or any model spec string (an LLM auditor with native tools)."""

from __future__ import annotations

from auditor.heuristic import HEURISTIC_SPECS, HeuristicAuditor
from scaffold.model import ChatModel
from scaffold.providers import build_model
from scaffold.secrets import SecretRegistry
from scaffold.specs import model_spec_from_arg


def build_auditor(spec: str, secrets: SecretRegistry) -> ChatModel:
    """The auditor ChatModel for `spec`: a heuristic spec (`heuristic`, `heuristic:sampled`,
    `heuristic:situations`), a model short string (`anthropic:MODEL`, `hf:smollm2-135m+constrained`,
    `vllm:URL#MODEL`, ...) or a model-spec YAML file (`provider: by_turn` plays each turn with the
    model routed to it)."""
    if spec in HEURISTIC_SPECS:
        return HeuristicAuditor(spec)
    return build_model(model_spec_from_arg(spec, "--auditor"), secrets)
