"""The `hf` provider: a local transformers causal LM, batched, with exact token records.

`hf:smollm2-135m` is the packaged SmolLM2-135M-Instruct; `hf:/path/to/dir` any local
model directory (see local_weights). Nothing is ever downloaded.

Options in `ModelSpec.extra` (unknown keys are a SpecError):
  device           "cpu" (default), "cuda", "cuda:1", ...
  dtype            "float32" (default), "bfloat16" or "float16"
  max_batch_size   most requests in one batched generation (default 16)
  batch_window_ms  how long the batcher waits for companions of a first request (default 5)
  tool_role        chat role that carries tool results: "user" (default; for templates
                   without a tool role, such as ChatML) or "tool"
  constrained      true: every reply with tools is one well-formed tool call
                   (constrained.py; the `+constrained` spec modifier sets it)
  max_calls_per_turn  constrained: up to this many calls per reply (`+calls:N`)
  copy_quotes      constrained: a «quote» in a string copies a request sent to the target
                   or a sentence of its replies, and a claim quoting a reply cites only
                   the replies that said it (scaffold/quotable.py; `+quotes`)
  max_request_quotes  copy_quotes: a claim's quotes after its first N requests must be
                   sentences of the target's replies (constrained.py; `+request_quotes:N`)
  prefix_cache_tokens reuse the KV of a prompt prefix every call shares (default 256; 0: off)
  turn_cache_mb    keep each conversation's KV for its next turn, up to this many MB
                   (default 2048; 0: off; turn_cache.py)
  lora             a PEFT LoRA adapter directory loaded onto the base (`+lora:DIR`);
                   `swap_adapter` / `load_adapter_weights` replace it without
                   reloading the base, and its fingerprint is the policy version
`max_concurrency` and `timeout_s` do not apply: concurrency is the batcher's job.

Generation is our own KV-cached decode loop (decode.py) rather than `model.generate`, so
that grammar-forced runs are read in one pass, earlier turns' KV is reused (turn_cache.py),
the cache grows into spare room instead of being concatenated each pass (growing_cache.py),
and it can record, at the sampling boundary, exactly what was sampled (DESIGN.md, training
data path) without keeping a vocabulary-sized score tensor per step:
  * `completion_ids` are the sampled ids, no padding, ending with the end-of-turn
    token when one was sampled;
  * `completion_logprobs[t]` is log_softmax(logits_t / T)[id_t], the log-probability
    under the distribution actually sampled from (T = temperature; the raw logits when
    greedy). Pure temperature sampling: no top-k / top-p, so this is also what a
    trainer recomputes from logits / T. Under constrained decoding the sample comes
    from that distribution renormalised over the grammar's allowed ids, and the
    record keeps the model's own logprob plus a mask of the tokens the grammar forced.
  * With `config.rollout_id` set, a prompt extends the rollout's previous turn's exact
    ids (token_prompts.py), so a rollout's turns merge into training rows by prefix.
Temperature: the call's, else the spec's, else the model's generation_config
(SmolLM2's: greedy). 0 means greedy. Seeding: each request samples with its own
torch.Generator seeded from `config.seed` (from torch's global RNG when unset), so a
seeded request draws the same numbers whatever shares its batch.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, Literal, Mapping, Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scaffold.messages import GenerateConfig, Message, ModelResponse, ToolDefinition
from scaffold.model import ModelError
from scaffold.providers.batcher import GenerationBatcher, batch_abandoned
from scaffold.providers.constrained import ToolCallGrammar, VocabularyMasks, reply_stop_id
from scaffold.providers.decode import Completion, DecodeRequest, DecodeStats, decode_batch
from scaffold.providers.local_weights import load_model_and_tokenizer, resolve_local_model
from scaffold.providers.precision import autocast
from scaffold.providers.prefix_cache import PrefixCache
from scaffold.providers.token_prompts import PromptBuilder, end_of_turn_ids, token_response, tools_key
from scaffold.providers.turn_cache import Layers, TurnCache, padded_cache
from scaffold.quotable import copy_quotes_field, max_request_quotes_field
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError, describe_validation_error

# One generate at a time in this process, whichever local model it is for: on a CPU two
# concurrent generates only fight over the same cores.
_ENGINE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-generate")
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MAX_GRAMMARS = 256


class LocalOptions(BaseModel):
    """The `hf` provider's options, read from `ModelSpec.extra`."""

    model_config = ConfigDict(extra="forbid")

    device: str = Field("cpu", description="Torch device: cpu, cuda, cuda:1, ...")
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="Weight dtype.")
    max_batch_size: int = Field(16, ge=1, le=1024, description="Most requests in one batched generation.")
    batch_window_ms: float = Field(5.0, ge=0, le=10_000, description="Wait for companions of a first request.")
    tool_role: Literal["user", "tool"] = Field("user", description="Chat role that carries tool results.")
    constrained: bool = Field(False, description="Constrain every reply with tools to well-formed calls.")
    max_calls_per_turn: int = Field(1, ge=1, le=8, description="Constrained: most calls in one reply (the model picks).")
    copy_quotes: bool = copy_quotes_field()
    max_request_quotes: int | None = max_request_quotes_field()
    lora: str | None = Field(None, description="Directory of a PEFT LoRA adapter to load on the base model.")
    prefix_cache_tokens: int = Field(
        256, ge=0, description="Reuse the KV of a prompt prefix all calls share when it is at least this long (0: off)."
    )
    turn_cache_mb: int = Field(
        2048, ge=0, description="Keep each conversation's KV for its next turn, at most this many MB in all (0: off)."
    )

    @model_validator(mode="after")
    def _limit_needs_quotes(self) -> LocalOptions:
        if self.max_request_quotes is not None and not self.copy_quotes:
            raise ValueError("max_request_quotes limits copied quotes: it needs copy_quotes true")
        return self


class LocalChatModel:
    """A ChatModel over a loaded transformers causal LM and its (chat-templated) tokenizer.

    `policy_version` is stamped on every TokenRecord; a trainer sets it after each
    update so that rollouts say which weights sampled them.
    """

    supports_prefill = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        max_tokens: int = 1024,
        temperature: float | None = None,
        max_batch_size: int = 16,
        batch_window_ms: float = 5.0,
        tool_role: str = "user",
        policy_version: str | None = None,
        constrained: bool = False,
        max_calls_per_turn: int = 1,
        copy_quotes: bool = False,
        max_request_quotes: int | None = None,
        record_logprobs: bool = True,
        prefix_cache_tokens: int = 256,
        turn_cache_mb: int = 2048,
        bf16_autocast: bool = False,
    ) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise SpecError(f"hf model {name!r}: its tokenizer has no chat template")
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.max_tokens, self.tool_role, self.policy_version = max_tokens, tool_role, policy_version
        self.constrained, self.record_logprobs = constrained, record_logprobs
        self.max_calls_per_turn, self.copy_quotes = max_calls_per_turn, copy_quotes
        self.max_request_quotes = max_request_quotes
        # Decode under bf16 autocast (weights stay as they are; the trainer's update uses the same).
        self.bf16_autocast = bf16_autocast
        self.prompts = PromptBuilder(tokenizer, tool_role=tool_role)
        # Reuse the KV of a prompt prefix every call shares, when it is this long (0: off).
        # Not for sliding-window attention: its cache keeps only the last window.
        config = model.config
        sliding = "sliding_attention" in (getattr(config, "layer_types", None) or ()) or bool(
            getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True)
        )
        self._sliding = sliding  # a growing cache keeps every position; a sliding layer's keeps a window
        self._prefix = PrefixCache(prefix_cache_tokens) if prefix_cache_tokens and not sliding else None
        # Each conversation's KV, for its next turn (same exclusion).
        self._turns = TurnCache(turn_cache_mb << 20) if turn_cache_mb and not sliding else None
        self._masks: VocabularyMasks | None = None
        self._grammars: dict[object, ToolCallGrammar] = {}
        gen = getattr(model, "generation_config", None)
        model_default = float(gen.temperature or 1.0) if gen is not None and gen.do_sample else 0.0
        self.temperature = model_default if temperature is None else temperature
        self.stop_ids = _stop_ids(model, tokenizer)
        self.forward_passes = 0  # decode passes so far (a pass reads a chunk of each row)
        self.decode_stats = DecodeStats()  # where decode time went, until taken (training logs it per step as sampler/*)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.stop_ids)
        # transformers 5.x renamed `past_key_values` to `cache` (argument and output field).
        # A PeftModel's forward takes **kwargs: ask the model it wraps.
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        self._cache_arg = "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"
        self.context_length = int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30)
        self.batcher: GenerationBatcher[DecodeRequest, Completion] = GenerationBatcher(
            self._run_batch,
            max_batch_size=max_batch_size,
            window_s=batch_window_ms / 1000,
            key=lambda r: r.temperature,  # one temperature per batch; seeds and lengths are per row
            executor=_ENGINE_THREAD,
        )

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, name: str, **options: Any) -> LocalChatModel:
        """Wrap an already-loaded model and tokenizer (tests, the trainer's policy)."""
        return cls(model, tokenizer, name=name, **options)

    async def swap_adapter(self, adapter_dir: str) -> str:
        """Replace the LoRA adapter's weights with those saved in `adapter_dir`.

        Runs on the engine thread, so it lands between two batched generations, never
        inside one; the base weights are not touched. Returns the new policy version
        (the adapter's fingerprint).
        """
        from scaffold.providers import lora

        def swap() -> str:
            lora.swap_adapter(self.model, adapter_dir)
            self.policy_version = lora.adapter_fingerprint(adapter_dir)
            return self.policy_version

        return await asyncio.get_running_loop().run_in_executor(_ENGINE_THREAD, swap)

    async def load_adapter_weights(self, state_dict: dict[str, torch.Tensor], policy_version: str) -> None:
        """Copy a trainer's in-memory LoRA tensors into the adapter, between generations."""
        from scaffold.providers import lora

        def load() -> None:
            lora.swap_adapter_weights(self.model, state_dict)
            self.policy_version = policy_version

        await asyncio.get_running_loop().run_in_executor(_ENGINE_THREAD, load)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def render_prompt(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = (), config: GenerateConfig | None = None
    ) -> str:
        """The prompt text of a fresh call (see PromptBuilder.render for prefill and sample_as)."""
        return self.prompts.render(messages, tools, config)

    def grammar_for(
        self,
        tools: Sequence[ToolDefinition],
        max_calls: int | None = None,
        citable: Sequence[str] | None = None,
        quotable: Mapping[str, Sequence[str]] | None = None,
    ) -> ToolCallGrammar:
        """The tool-call grammar over `tools` (built once per tool list, call limit, citable ids and quotable texts)."""
        max_calls = max_calls or self.max_calls_per_turn
        quoted = tuple((q, tuple(ids)) for q, ids in quotable.items()) if quotable is not None else None
        key = (tools_key(tools), max_calls, tuple(citable) if citable is not None else None, quoted)
        if key not in self._grammars:
            if len(self._grammars) >= MAX_GRAMMARS:  # citable ids change every turn: keep the recent ones
                self._grammars.pop(next(iter(self._grammars)))
            if self._masks is None:
                head = self.model.get_output_embeddings()
                width = getattr(head, "out_features", None) or getattr(self.model.config, "vocab_size", None)
                specials = self.stop_ids | set(self.tokenizer.all_special_ids)
                self._masks = VocabularyMasks(self.tokenizer, specials, logits_size=width)
            stop_id = reply_stop_id(self.tokenizer, self.stop_ids)
            self._grammars[key] = ToolCallGrammar(
                self.tokenizer, tools, stop_id=stop_id, masks=self._masks, max_calls=max_calls, citable=citable,
                quotable=quotable, max_request_quotes=self.max_request_quotes,
            )
        return self._grammars[key]

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        config: GenerateConfig | None = None,
    ) -> ModelResponse:
        """Answer the conversation (or write the user's turn); see the module docstring."""
        config = config or GenerateConfig()
        started = time.perf_counter()
        prompt_ids = self.prompts.build(messages, tools, config).ids
        room = self.context_length - len(prompt_ids)
        if room < 1:
            n, limit = len(prompt_ids), self.context_length
            raise ModelError(f"{self.name}: the prompt has {n} tokens; the model's context is {limit} tokens")
        temperature = self.temperature if config.temperature is None else config.temperature
        prefilled = bool(messages) and messages[-1].role == "assistant" and messages[-1].prefill is not None
        grammar = None
        if self.constrained and tools and config.sample_as == "assistant" and not prefilled:
            required = config.required_among(tools)
            # The prompt still lists every tool (a prefix of the next turn's prompt); only the
            # grammar narrows, to exactly one call of the required tool.
            # With copy_quotes, a call whose caller named no quotable texts may quote nothing.
            citable, quotable = config.citable_ids, (config.quotable or {}) if self.copy_quotes else None
            if required:
                grammar = self.grammar_for([required], 1, citable, quotable)
            else:
                grammar = self.grammar_for(tools, None, citable, quotable)
        max_new = min(config.max_tokens or self.max_tokens, room)
        request = DecodeRequest(prompt_ids, max_new, float(temperature), config.seed, grammar)
        try:
            done = await self.batcher.submit(request)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f"{self.name}: generation failed: {type(exc).__name__}: {exc}") from exc
        return token_response(
            self.prompts,
            name=self.name,
            messages=messages,
            tools=tools,
            config=config,
            prompt_ids=prompt_ids,
            completion_ids=done.ids,
            logprobs=done.logprobs if self.record_logprobs else None,
            mask=done.mask,
            stopped=done.stopped,
            policy_version=done.policy_version,
            latency_s=time.perf_counter() - started,
        )

    def _run_batch(self, requests: list[DecodeRequest]) -> list[Completion]:
        """One batched generation (blocking; runs on the engine thread)."""
        with torch.inference_mode(), autocast(self.device, self.bf16_autocast):
            return self._decode(requests)

    def _decode(self, requests: list[DecodeRequest]) -> list[Completion]:
        version = self.policy_version
        key = (id(self.model), version)
        prompts = [r.prompt_ids for r in requests]
        reused, block, cached_mask = self._reused_kv(prompts, key)
        if block is None and not self._sliding:
            from scaffold.providers.growing_cache import growing_cache  # imports transformers

            block = growing_cache()  # else the model starts a concatenating one
        device = self.device
        result = decode_batch(
            self.model,
            requests,
            reused=[n for n, _ in reused],
            cache=block,
            cached_mask=cached_mask,
            cache_arg=self._cache_arg,
            pad_id=self.pad_id,
            stop_ids=frozenset(self.stop_ids),
            record=self.record_logprobs,
            device=device,
            new_generator=lambda seed: _generator(seed, device),
            abandoned=batch_abandoned,
            keep_kv=self._turns is not None,
        )
        self.forward_passes += result.counts.passes
        self.decode_stats.add(result.counts)
        if self._turns is not None:
            for row in result.rows:
                # The row's cache columns hold its prompt and all but its last id.
                if row.kv is not None and len(row.ids) >= 2:
                    self._turns.store(row.request.prompt_ids + row.ids[:-1], row.kv, key)
        return [row.completion(version) for row in result.rows]

    def _reused_kv(self, prompts: list[list[int]], key: object) -> tuple[list[tuple[int, Layers]], Any, list[list[int]]]:
        """Each row's reused KV (length, layers), the batch cache holding it (None: none),
        and that block's attention mask. A row continues its conversation from the turn
        cache, else starts from the prefix every fresh row shares (the system prompt)."""
        reused = [self._turns.lookup(p, key) if self._turns else (0, []) for p in prompts]
        fresh = [i for i, (n, _) in enumerate(reused) if n == 0]
        shared = 0
        if self._prefix is not None and fresh:
            shared = self._prefix.prefix_for([prompts[i] for i in fresh], key, self._fill_prefix)
        if len(fresh) == len(prompts):  # nobody continues: every row shares the prefix (a view, no copy)
            n = len(prompts)
            block = self._prefix.for_batch(n) if shared else None  # type: ignore[union-attr]
            return [(shared, [])] * n, block, [[1] * shared for _ in prompts]
        for i in fresh:
            reused[i] = (shared, self._prefix.layers) if shared else (0, [])  # type: ignore[union-attr]
        block, mask = padded_cache(reused)
        return reused, block, mask

    def _fill_prefix(self, ids: list[int]) -> Any:
        """The model's KV cache after reading `ids` (batch 1), for the prefix cache."""
        tensor = torch.tensor([ids], device=self.device)
        out = self.model(
            input_ids=tensor,
            attention_mask=torch.ones_like(tensor),
            position_ids=torch.arange(len(ids), device=self.device)[None],
            use_cache=True,
            logits_to_keep=1,
        )
        return out[self._cache_arg]


def _generator(seed: int | None, device: torch.device) -> torch.Generator:
    if seed is None:  # from the global RNG, so torch.manual_seed still makes a run reproducible
        seed = int(torch.randint(0, 2**62, (1,)).item())
    return torch.Generator(device=device).manual_seed(seed)


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    """The tokenizer's end-of-turn ids plus the model's generation_config eos."""
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    try:
        return end_of_turn_ids(tokenizer, [gen_eos])
    except ModelError:
        raise SpecError("hf model: its tokenizer defines no end-of-turn or eos token") from None


@lru_cache(maxsize=4)
def _load(path: str, dtype: str, device: str) -> tuple[Any, Any]:
    # One copy of the weights per (path, dtype, device), whatever the number of specs using it.
    return load_model_and_tokenizer(path, dtype=_DTYPES[dtype], device=device)


def build(spec: ModelSpec, secrets: SecretRegistry) -> LocalChatModel:
    """The provider registry's entry point: a LocalChatModel for an `hf` spec."""
    try:
        options = LocalOptions.model_validate(spec.extra)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, f"{spec.label()}: extra")) from None
    if options.device.startswith("cuda") and not torch.cuda.is_available():
        raise SpecError(f"{spec.label()}: extra.device is {options.device!r} but no CUDA device is available")
    path = resolve_local_model(spec.model)
    version = None
    if options.lora:
        from scaffold.providers import lora

        # A private copy of the base: peft injects its layers into the model it wraps, and
        # the cached base is shared by every spec that names it.
        model, tokenizer = load_model_and_tokenizer(path, dtype=_DTYPES[options.dtype], device=options.device)
        model = lora.attach_adapter(model, options.lora)
        version = lora.adapter_fingerprint(options.lora)
    else:
        model, tokenizer = _load(str(path), options.dtype, options.device)
    return LocalChatModel(
        model,
        tokenizer,
        name=spec.label(),
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        max_batch_size=options.max_batch_size,
        batch_window_ms=options.batch_window_ms,
        tool_role=options.tool_role,
        constrained=options.constrained,
        max_calls_per_turn=options.max_calls_per_turn,
        copy_quotes=options.copy_quotes,
        max_request_quotes=options.max_request_quotes,
        policy_version=version,
        prefix_cache_tokens=options.prefix_cache_tokens,
        turn_cache_mb=options.turn_cache_mb,
    )
