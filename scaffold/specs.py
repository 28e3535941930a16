"""Model specs: which provider, which model, and how to call it.

A spec comes from YAML or from a short string:

    anthropic:claude-sonnet-4-5
    openai:gpt-5-mini
    hf:smollm2-135m            (the packaged default)  or  hf:/path/to/model
    openai_compatible:http://127.0.0.1:8000/v1#served-model-name

The token-level policies (`hf`, and `vllm:URL#MODEL`: a vLLM server driven with token
ids) take modifiers, each after a '+', in any order:

    +lora:ADAPTER_DIR    a LoRA adapter (peft save_pretrained dir)   -> extra["lora"]       (hf)
    +constrained         constrained tool-call decoding              -> extra["constrained"] (hf)
    +calls:N             constrained: up to N calls per reply        -> extra["max_calls_per_turn"] (hf)
    +quotes              constrained: a «quote» copies real text     -> extra["copy_quotes"] (hf)
    +request_quotes:N    +quotes: a claim quotes at most N requests  -> extra["max_request_quotes"] (hf)
    +max_tokens:N        most tokens per reply                       -> max_tokens
    +temperature:T       sampling temperature (0: greedy)            -> temperature
    e.g. hf:smollm2-135m+lora:/runs/step-40+constrained+max_tokens:256

Parsing is deliberately simple: the text after 'hf:' (or after the '#' of a vllm spec) is
split on '+'; the first part is the model, each other part a modifier. So neither a path
nor ADAPTER_DIR may contain '+'; an ADAPTER_DIR may contain ':' (everything after
'lora:' is the directory). API providers take no modifiers: `anthropic:x+constrained` is
an error, not a model named so.

Every error names the field at fault, so the CLI can print one clear line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

KNOWN_PROVIDERS = ("anthropic", "openai", "openai_compatible", "hf", "vllm", "by_turn")
MODIFIERS = {  # the '+' modifiers of a token-policy short string, and who takes them
    "lora:DIR": ("hf",),
    "constrained": ("hf",),
    "calls:N": ("hf",),
    "quotes": ("hf",),
    "request_quotes:N": ("hf",),
    "max_tokens:N": ("hf", "vllm"),
    "temperature:T": ("hf", "vllm"),
}
HF_MODIFIERS = tuple(MODIFIERS)


class SpecError(ValueError):
    """A spec (file, YAML, string or field) is invalid. The message is one line for people."""


class ModelSpec(BaseModel):
    """How to reach one model. API keys are never stored here: only the variable's name."""

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        description="One of: anthropic, openai, openai_compatible, hf, vllm, by_turn (turns routed to models)."
    )
    model: str = Field(description="Model name for API providers; name or local path for hf.")
    base_url: str | None = Field(None, description="API base URL (required for openai_compatible).")
    api_key_env: str | None = Field(
        None, description="Environment variable holding the API key (default: ANTHROPIC_API_KEY / OPENAI_API_KEY)."
    )
    max_concurrency: int = Field(8, ge=1, le=4096, description="Requests in flight at once to this provider.")
    max_retries: int = Field(5, ge=0, le=50, description="Retries on 429, 5xx, timeouts and connection errors.")
    retry_base_delay_s: float = Field(1.0, gt=0, description="First backoff delay; doubles each retry, with jitter.")
    retry_max_delay_s: float = Field(30.0, gt=0, description="Longest single backoff delay.")
    timeout_s: float = Field(
        120.0, gt=0, description="Deadline of one request attempt, connection to last byte; a missed deadline is retried."
    )
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


# The tags of tagged unions (a spec given as a name or as data) are pydantic's bookkeeping,
# not keys anyone wrote: they are left out of the field path shown to people.
UNION_TAGS = ("<by name>", "<as data>")


def describe_validation_error(exc: ValidationError, where: str) -> str:
    """One line naming the first bad field, for people."""
    first = exc.errors()[0]
    field = ".".join(str(x) for x in first["loc"] if x not in UNION_TAGS) or "(top level)"
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
        model, *parts = rest.split("+")
        return _with_modifiers(text, ModelSpec(provider="hf", model=model), parts)
    if provider == "vllm":
        url, hash_, tail = rest.partition("#")
        model, *parts = tail.split("+")
        if not hash_ or not model or not url.startswith(("http://", "https://")):
            raise SpecError(f"model spec {text!r}: expected 'vllm:http://HOST:PORT/v1#SERVED_MODEL'")
        return _with_modifiers(text, ModelSpec(provider="vllm", model=model, base_url=url), parts)
    if any(_modifier_name(part) in MODIFIERS for part in rest.split("+")[1:]):
        raise SpecError(f"model spec {text!r}: modifiers ({', '.join('+' + m for m in MODIFIERS)}) are for hf and vllm only")
    if provider == "openai_compatible":
        url, hash_, model = rest.partition("#")
        if not hash_ or not model or not url.startswith(("http://", "https://")):
            raise SpecError(f"model spec {text!r}: expected 'openai_compatible:http://HOST:PORT/v1#MODEL'")
        return ModelSpec(provider=provider, model=model, base_url=url)
    return ModelSpec(provider=provider, model=rest)


def _modifier_name(part: str) -> str:
    """`lora:/x` -> `lora:DIR`, `max_tokens:64` -> `max_tokens:N`: the key into MODIFIERS."""
    key, colon, _ = part.partition(":")
    if not colon:
        return part
    return next((name for name in MODIFIERS if name.startswith(key + ":")), part)


def _with_modifiers(text: str, spec: ModelSpec, parts: list[str]) -> ModelSpec:
    """`spec` with the '+' modifiers applied (see the module docstring)."""
    if not spec.model:
        raise SpecError(f"model spec {text!r}: expected a model before any '+' modifier")
    extra: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    seen: set[str] = set()
    for part in parts:
        name = _modifier_name(part)
        key, _, value = part.partition(":")
        if name not in MODIFIERS or spec.provider not in MODIFIERS[name]:
            known = ", ".join("+" + m for m, who in MODIFIERS.items() if spec.provider in who)
            raise SpecError(f"model spec {text!r}: unknown modifier '+{part}' for {spec.provider}; known: {known}")
        if key in seen:
            raise SpecError(f"model spec {text!r}: '+{key}' given twice")
        seen.add(key)
        if key == "lora":
            if not value:
                raise SpecError(f"model spec {text!r}: '+lora:' needs an adapter directory")
            extra["lora"] = value
        elif key == "constrained":
            extra["constrained"] = True
        elif key == "quotes":
            extra["copy_quotes"] = True
        elif key in ("calls", "request_quotes"):
            if not value.isdigit():
                raise SpecError(f"model spec {text!r}: '+{part}': {value!r} is not a whole number")
            extra["max_calls_per_turn" if key == "calls" else "max_request_quotes"] = int(value)
        else:
            try:
                fields[key] = int(value) if key == "max_tokens" else float(value)
            except ValueError:
                raise SpecError(f"model spec {text!r}: '+{part}': {value!r} is not a number") from None
    try:
        return ModelSpec.model_validate({**spec.model_dump(), **fields, "extra": extra})
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, f"model spec {text!r}")) from None


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


# Configuration files are small; a bigger one is a mistake (or /dev/zero). The size a
# document would have with its aliases expanded is capped too: PyYAML shares an alias's
# object, so a 500-byte "billion laughs" file loads, then expands exponentially in
# whatever walks it (validation, JSON, the store).
MAX_YAML_BYTES = 4 << 20
MAX_YAML_NODES = 1_000_000  # values, aliases expanded
MAX_YAML_CHARS = 64 << 20  # characters of scalars, aliases expanded


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents too big once aliases are expanded, and recursive ones."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.sizes: dict[int, tuple[int, int]] = {}  # node id -> (values, characters), expanded
        self.composing: set[str] = set()  # anchors whose node is still being composed

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.composing:
                raise yaml.YAMLError("an alias refers to an anchor that contains it (a recursive document)")
            return super().compose_node(parent, index)  # its anchor's node, already sized
        anchor = getattr(event, "anchor", None)
        if anchor:
            self.composing.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            if anchor:
                self.composing.discard(anchor)
        if isinstance(node, yaml.ScalarNode):
            size = (1, len(node.value))
        else:
            children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
            parts = [self.sizes.get(id(c), (1, 0)) for c in children]
            size = (1 + sum(n for n, _ in parts), sum(c for _, c in parts))
        if size[0] > MAX_YAML_NODES or size[1] > MAX_YAML_CHARS:
            raise yaml.YAMLError(
                f"more than {MAX_YAML_NODES} values or {MAX_YAML_CHARS} characters once its aliases are expanded "
                "(an alias bomb?)"
            )
        self.sizes[id(node)] = size
        return node


def parse_yaml(text: str, where: str) -> Any:
    """`text` parsed as YAML (safe, aliases capped); SpecError naming `where`, the line and the problem."""
    loader = _LimitedLoader(text)
    try:
        return loader.get_single_data()
    except RecursionError:
        raise SpecError(f"{where}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{where}: invalid YAML{at}: {problem}") from None
    finally:
        loader.dispose()


def read_yaml(path: str | Path, max_bytes: int = MAX_YAML_BYTES) -> Any:
    """Any YAML document from a regular file of at most `max_bytes`; one-line SpecErrors otherwise."""
    p = Path(path)
    try:
        exists, is_dir, is_file = p.exists(), p.is_dir(), p.is_file()
    except OSError as exc:  # a name too long for the file system, say
        raise SpecError(f"{str(p)[:200]}: cannot read it ({exc.strerror or exc})") from None
    if not exists:
        raise SpecError(f"{p}: no such file")
    if is_dir:
        raise SpecError(f"{p}: is a directory, expected a YAML file")
    if not is_file:
        raise SpecError(f"{p}: not a regular file, expected a YAML file")
    if p.stat().st_size > max_bytes:
        raise SpecError(f"{p}: {p.stat().st_size} bytes, more than the {max_bytes} a YAML file may have here")
    try:
        with open(p, "rb") as handle:
            raw = handle.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise SpecError(f"{p}: more than the {max_bytes} bytes a YAML file may have here")
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{p}: not a UTF-8 text file") from None
    except OSError as exc:
        raise SpecError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    return parse_yaml(text, str(p))


def load_yaml_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping from `path`, with one-line errors for missing, oversized or bad files."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a YAML mapping at the top level")
    return data


def spec_provider(value: str) -> str:
    """The provider a command-line model value names: `hf` for `hf:...`, the `provider` of a
    model-spec file ("" when the file cannot be read: its own spec check reports that)."""
    if value.endswith((".yaml", ".yml")):
        try:
            return model_spec_from_arg(value).provider
        except SpecError:
            return ""
    return value.split(":", 1)[0]


def model_spec_from_arg(value: str, where: str = "model") -> ModelSpec:
    """A ModelSpec from a command-line value: a short string, or a YAML file holding one spec.

    The file form reaches every field (base_url, api_key_env, max_concurrency, extra, ...).
    """
    if value.endswith((".yaml", ".yml")):
        return model_spec_from(load_yaml_file(value), f"{where} {value}")
    return model_spec_from(value, where)
