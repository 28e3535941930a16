"""Provider registry: a provider name resolves to the module that builds its ChatModel.

Modules are imported only when used, so `hf` (torch) costs nothing to an API audit.
Each module exposes `build(spec: ModelSpec, secrets: SecretRegistry) -> ChatModel`.
Adding a provider is adding a module and a line here.
"""

from __future__ import annotations

import importlib

from scaffold.model import ChatModel
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError

PROVIDER_MODULES: dict[str, str] = {
    "anthropic": "scaffold.providers.anthropic_api",
    "openai": "scaffold.providers.openai_api",
    "openai_compatible": "scaffold.providers.openai_api",
    "hf": "scaffold.providers.hf_local",
    "vllm": "scaffold.providers.vllm_server",
    "by_turn": "scaffold.providers.by_turn",
}


def build_model(spec: ModelSpec, secrets: SecretRegistry) -> ChatModel:
    """Build the ChatModel for `spec`. Raises SpecError for unusable specs (missing key...)."""
    module_name = PROVIDER_MODULES.get(spec.provider)
    if module_name is None:
        raise SpecError(f"unknown provider {spec.provider!r}; known: {', '.join(PROVIDER_MODULES)}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = "local" if spec.provider in ("hf", "vllm") else spec.provider
        raise SpecError(
            f"provider {spec.provider!r} needs packages that are not installed ({exc.name}); "
            f"install them with: pip install 'auditrl[{extra}]'"
        ) from None
    return module.build(spec, secrets)
