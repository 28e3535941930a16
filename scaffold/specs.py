"""Model specs: which provider, which model, and how to call it.

A spec comes from YAML or from a short string:

    anthropic:claude-sonnet-4-5
    openai:gpt-5-mini
    hf:smollm2-135m            (the packaged default)  or  hf:/path/to/model
    openai_compatible:http://127.0.0.1:8000/v1#served-model-name

An hf spec may add modifiers, each after a '+', in any order:

    hf:PATH+lora:ADAPTER_DIR     a LoRA adapter (peft save_pretrained dir) -> extra["lora"]
    hf:PATH+constrained          constrained decoding                      -> extra["constrained"] = True
    hf:smollm2-135m+lora:/runs/step-40+constrained

Parsing is deliberately simple: the text after 'hf:' is split on '+'; the first part is the
model, each other part a modifier. So neither PATH nor ADAPTER_DIR may contain '+'; an
ADAPTER_DIR may contain ':' (everything after 'lora:' is the directory). Other providers
take no modifiers: `anthropic:x+constrained` is an error, not a model named so.

Every error names the field at fault, so the CLI can print one clear line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

KNOWN_PROVIDERS = ("anthropic", "openai", "openai_compatible", "hf")
HF_MODIFIERS = ("lora:DIR", "constrained")  # the '+' modifiers of an hf short string


class SpecError(ValueError):
    """A spec (file, YAML, string or field) is invalid. The message is one line for people."""


class ModelSpec(BaseModel):
    """How to reach one model. API keys are never stored here: only the variable's name."""

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(description="One of: anthropic, openai, openai_compatible, hf.")
    model: str = Field(description="Model name for API providers; name or local path for hf.")
    base_url: str | None = Field(None, description="API base URL (required for openai_compatible).")
    api_key_env: str | None = Field(
        None, description="Environment variable holding the API key (default: ANTHROPIC_API_KEY / OPENAI_API_KEY)."
    )
    max_concurrency: int = Field(8, ge=1, le=4096, description="Requests in flight at once to this provider.")
    max_retries: int = Field(5, ge=0, le=50, description="Retries on 429, 5xx, timeouts and connection errors.")
    retry_base_delay_s: float = Field(1.0, gt=0, description="First backoff delay; doubles each retry, with jitter.")
    retry_max_delay_s: float = Field(30.0, gt=0, description="Longest single backoff delay.")
    timeout_s: float = Field(120.0, gt=0, description="Timeout of one request.")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature (provider default if unset).")
    max_tokens: int = Field(1024, ge=1, description="Most tokens one reply may have.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Provider-specific options.")

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in KNOWN_PROVIDERS:
            raise ValueError(f"unknown provider {value!r}; known: {', '.join(KNOWN_PROVIDERS)}")
        return value

    def label(self) -> str:
        """A short human name, e.g. `anthropic:claude-sonnet-4-5`."""
        return f"{self.provider}:{self.model}"


def describe_validation_error(exc: ValidationError, where: str) -> str:
    """One line naming the first bad field, for people."""
    first = exc.errors()[0]
    field = ".".join(str(x) for x in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        return f"{where}: unknown field '{field}'"
    if first["type"] == "missing":
        return f"{where}: missing field '{field}'"
    return f"{where}: field '{field}': {first['msg']}"


def parse_model_string(text: str) -> ModelSpec:
    """Parse `provider:model` (and `openai_compatible:URL#model`, `hf:model+modifiers`) into a ModelSpec."""
    provider, sep, rest = text.partition(":")
    if not sep or not rest:
        raise SpecError(f"model spec {text!r}: expected 'provider:model', e.g. 'anthropic:claude-sonnet-4-5'")
    if provider not in KNOWN_PROVIDERS:
        raise SpecError(f"model spec {text!r}: unknown provider {provider!r}; known: {', '.join(KNOWN_PROVIDERS)}")
    if provider == "hf":
        return _parse_hf(text, rest)
    if any(_modifier_name(part) in HF_MODIFIERS for part in rest.split("+")[1:]):
        raise SpecError(f"model spec {text!r}: modifiers ({', '.join('+' + m for m in HF_MODIFIERS)}) are for hf only")
    if provider == "openai_compatible":
        url, hash_, model = rest.partition("#")
        if not hash_ or not model or not url.startswith(("http://", "https://")):
            raise SpecError(f"model spec {text!r}: expected 'openai_compatible:http://HOST:PORT/v1#MODEL'")
        return ModelSpec(provider=provider, model=model, base_url=url)
    return ModelSpec(provider=provider, model=rest)


def _modifier_name(part: str) -> str:
    """`lora:/x` -> `lora:DIR`, `constrained` -> `constrained`: the key into HF_MODIFIERS."""
    return "lora:DIR" if part.startswith("lora:") else part


def _parse_hf(text: str, rest: str) -> ModelSpec:
    """`hf:MODEL[+lora:DIR][+constrained]` (see the module docstring)."""
    model, *parts = rest.split("+")
    if not model:
        raise SpecError(f"model spec {text!r}: expected 'hf:MODEL' before any '+' modifier")
    extra: dict[str, Any] = {}
    for part in parts:
        if _modifier_name(part) not in HF_MODIFIERS:
            known = ", ".join("+" + m for m in HF_MODIFIERS)
            raise SpecError(f"model spec {text!r}: unknown modifier '+{part}'; known: {known}")
        key = part.partition(":")[0]  # "lora" or "constrained"
        if key in extra:
            raise SpecError(f"model spec {text!r}: '+{key}' given twice")
        if key == "lora":
            extra["lora"] = part[len("lora:") :]
            if not extra["lora"]:
                raise SpecError(f"model spec {text!r}: '+lora:' needs an adapter directory")
        else:
            extra[key] = True
    return ModelSpec(provider="hf", model=model, extra=extra)


def model_spec_from(value: Any, where: str = "model") -> ModelSpec:
    """A ModelSpec from a short string or a mapping (as found in YAML)."""
    if isinstance(value, ModelSpec):
        return value
    if isinstance(value, str):
        return parse_model_string(value)
    if isinstance(value, dict):
        try:
            return ModelSpec.model_validate(value)
        except ValidationError as exc:
            raise SpecError(describe_validation_error(exc, where)) from None
    raise SpecError(f"{where}: expected a 'provider:model' string or a mapping, got {type(value).__name__}")


def load_yaml_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping from `path`, with one-line errors for missing or bad files."""
    p = Path(path)
    if not p.exists():
        raise SpecError(f"{p}: no such file")
    if p.is_dir():
        raise SpecError(f"{p}: is a directory, expected a YAML file")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{p}: invalid YAML{at}: {problem}") from None
    except UnicodeDecodeError:
        raise SpecError(f"{p}: not a UTF-8 text file") from None
    if not isinstance(data, dict):
        raise SpecError(f"{p}: expected a YAML mapping at the top level")
    return data
