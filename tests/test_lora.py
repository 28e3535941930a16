"""LoRA adapters on the local policy (scaffold/providers/lora.py) and the hf spec modifiers.

The adapters are made here with peft on copies of the tiny random Llama from hf_fixtures
(init_lora_weights=False, so they really change the logits), saved to tmp dirs. Each
test gets a fresh deep copy of the base, because attaching an adapter edits it in place.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from scaffold.specs import ModelSpec, SpecError, parse_model_string

# ---------------------------------------------------------------- spec strings (no torch)


@pytest.mark.parametrize(
    ("text", "model", "extra"),
    [
        ("hf:smollm2-135m", "smollm2-135m", {}),
        ("hf:smollm2-135m+constrained", "smollm2-135m", {"constrained": True}),
        ("hf:/models/base+lora:/runs/step-40", "/models/base", {"lora": "/runs/step-40"}),
        ("hf:/m+lora:C:/odd:dir+constrained", "/m", {"lora": "C:/odd:dir", "constrained": True}),
        ("hf:/m+constrained+lora:rel/dir", "/m", {"lora": "rel/dir", "constrained": True}),
    ],
)
def test_hf_modifiers_parse(text: str, model: str, extra: dict[str, Any]) -> None:
    assert parse_model_string(text) == ModelSpec(provider="hf", model=model, extra=extra)


def test_sampling_modifiers_set_spec_fields_for_hf_and_vllm() -> None:
    hf = parse_model_string("hf:smollm2-135m+max_tokens:96+temperature:0.7+constrained")
    assert (hf.max_tokens, hf.temperature, hf.extra) == (96, 0.7, {"constrained": True})
    served = parse_model_string("vllm:http://127.0.0.1:8011/v1#smollm2-135m+temperature:1")
    assert served == ModelSpec(provider="vllm", model="smollm2-135m", base_url="http://127.0.0.1:8011/v1", temperature=1.0)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("hf:/m+turbo", "unknown modifier '+turbo' for hf; known: +lora:DIR, +constrained, +calls:N, +quotes, +request_quotes:N, +max_tokens:N"),
        ("hf:/m+max_tokens:many", "'many' is not a number"),
        ("hf:/m+temperature:9", "field 'temperature'"),
        ("vllm:http://h:1/v1#m+lora:/x", "unknown modifier '+lora:/x' for vllm"),
        ("vllm:h#m", "expected 'vllm:http://HOST:PORT/v1#SERVED_MODEL'"),
        ("hf:/m+lora", "unknown modifier '+lora'"),
        ("hf:/m+", "unknown modifier '+'"),
        ("hf:/m+lora:", "needs an adapter directory"),
        ("hf:/m+lora:a+lora:b", "'+lora' given twice"),
        ("hf:/m+constrained+constrained", "'+constrained' given twice"),
        ("hf:+constrained", "expected a model before any '+' modifier"),
        ("anthropic:claude-sonnet-4-5+constrained", "are for hf and vllm only"),
        ("openai_compatible:http://127.0.0.1:8000/v1#m+lora:/x", "are for hf and vllm only"),
    ],
)
def test_hf_modifier_errors(text: str, needle: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_model_string(text)
    assert needle in str(err.value) and text in str(err.value)


def test_other_providers_unchanged() -> None:
    assert parse_model_string("openai:gpt-5-mini").extra == {}
    spec = parse_model_string("openai_compatible:http://h:1/v1#name")
    assert (spec.model, spec.base_url) == ("name", "http://h:1/v1")


# ---------------------------------------------------------------- adapters


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tiny base, plus adapters saved to disk: a1, a2 (r=4), r8 (r=8), a2bin (.bin), misfits."""
    hf = pytest.importorskip("hf_fixtures")
    peft = pytest.importorskip("peft")
    torch, transformers = hf.torch, hf.transformers
    base = hf.tiny_model()
    root = tmp_path_factory.mktemp("lora")

    def save(model: Any, name: str, seed: int, r: int = 4, safe: bool = True) -> Path:
        torch.manual_seed(seed)
        config = peft.LoraConfig(r=r, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        peft.get_peft_model(copy.deepcopy(model), config).save_pretrained(root / name, safe_serialization=safe)
        return root / name

    def small(**overrides: Any) -> Any:
        options = dict(vocab_size=64, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2)
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**{**options, **overrides}))

    dirs = {"a1": save(base, "a1", 1), "a2": save(base, "a2", 2), "r8": save(base, "r8", 3, r=8),
            "a2bin": save(base, "a2bin", 2, safe=False),
            "narrow": save(small(hidden_size=32), "narrow", 4), "deep": save(small(num_hidden_layers=4), "deep", 5)}
    dirs["ia3"] = root / "ia3"
    shutil.copytree(dirs["a1"], dirs["ia3"])
    config = json.loads((dirs["ia3"] / "adapter_config.json").read_text())
    (dirs["ia3"] / "adapter_config.json").write_text(json.dumps({**config, "peft_type": "IA3"}))
    (root / "empty").mkdir()
    ids = torch.tensor([[1, 20, 300, 4000, 17, 9]])
    return {"torch": torch, "peft": peft, "base": base, "dirs": dirs, "root": root, "ids": ids}


def fresh(env: dict[str, Any]) -> Any:
    return copy.deepcopy(env["base"])


def logits(env: dict[str, Any], model: Any) -> Any:
    with env["torch"].no_grad():
        return model(input_ids=env["ids"], logits_to_keep=1).logits  # last position only: fast


def reference(env: dict[str, Any], name: str) -> Any:
    """Logits of adapter `name` freshly attached to a fresh base (computed once)."""
    from scaffold.providers.lora import attach_adapter

    refs = env.setdefault("refs", {})
    if name not in refs:
        refs[name] = logits(env, attach_adapter(fresh(env), env["dirs"][name]))
    return refs[name]


def base_params(model: Any) -> dict[str, tuple[int, int]]:
    return {n: (id(p), p.data_ptr()) for n, p in model.named_parameters() if "lora_" not in n}


def lora_params(model: Any) -> dict[str, tuple[int, int]]:
    return {n: (id(p), p.data_ptr()) for n, p in model.named_parameters() if "lora_" in n}


def test_attach_changes_logits(env: dict[str, Any]) -> None:
    from scaffold.providers.lora import attach_adapter

    model = attach_adapter(fresh(env), env["dirs"]["a1"])
    assert not env["torch"].allclose(logits(env, model), logits(env, env["base"]), atol=1e-3)
    assert not any(p.requires_grad for p in model.parameters())
    assert not env["torch"].allclose(reference(env, "a1"), reference(env, "a2"), atol=1e-3)


def test_hotswap_matches_fresh_load_without_reloading_base(env: dict[str, Any]) -> None:
    from scaffold.providers.lora import attach_adapter, swap_adapter

    model = attach_adapter(fresh(env), env["dirs"]["a1"])
    before, lora_before = base_params(model), lora_params(model)
    assert swap_adapter(model, env["dirs"]["a2"]) == "hotswap"
    env["torch"].testing.assert_close(logits(env, model), reference(env, "a2"), atol=1e-5, rtol=0)
    assert base_params(model) == before
    assert lora_params(model) == lora_before  # copied in place: compiled graphs stay valid
    assert swap_adapter(model, env["dirs"]["a1"]) == "hotswap"
    env["torch"].testing.assert_close(logits(env, model), reference(env, "a1"), atol=1e-5, rtol=0)


def test_swap_weights_from_state_dict(env: dict[str, Any]) -> None:
    from scaffold.providers.lora import attach_adapter, swap_adapter_weights

    peft = env["peft"]
    trainer = attach_adapter(fresh(env), env["dirs"]["a2"])
    state = peft.get_peft_model_state_dict(trainer)  # what a trainer would push each step
    model = attach_adapter(fresh(env), env["dirs"]["a1"])
    before, lora_before = base_params(model), lora_params(model)
    a1_logits = logits(env, model)
    key = next(iter(state))
    with pytest.raises(ValueError, match="not given"):
        swap_adapter_weights(model, {k: v for k, v in state.items() if k != key})
    with pytest.raises(ValueError, match="shape"):
        swap_adapter_weights(model, {**state, key: state[key][:1]})
    with pytest.raises(ValueError, match="matches no tensor"):
        swap_adapter_weights(model, {**state, "nope.lora_A.weight": state[key]})
    env["torch"].testing.assert_close(logits(env, model), a1_logits)  # all-or-nothing
    swap_adapter_weights(model, state)
    env["torch"].testing.assert_close(logits(env, model), reference(env, "a2"), atol=1e-5, rtol=0)
    assert (base_params(model), lora_params(model)) == (before, lora_before)
    named = {k: v for k, v in trainer.named_parameters() if "lora_" in k}  # keys with the adapter name
    model2 = attach_adapter(fresh(env), env["dirs"]["a1"])
    swap_adapter_weights(model2, named)
    env["torch"].testing.assert_close(logits(env, model2), reference(env, "a2"), atol=1e-5, rtol=0)


def test_other_rank_falls_back_to_reloading_the_adapter(env: dict[str, Any]) -> None:
    from scaffold.providers.lora import attach_adapter, swap_adapter

    model = attach_adapter(fresh(env), env["dirs"]["a1"])
    before = base_params(model)
    assert swap_adapter(model, env["dirs"]["r8"]) == "reloaded-adapter"
    env["torch"].testing.assert_close(logits(env, model), reference(env, "r8"), atol=1e-5, rtol=0)
    assert base_params(model) == before
    assert list(model.peft_config) == ["default"] and model.active_adapter == "default"
    assert not any(p.requires_grad for p in model.parameters())
    assert swap_adapter(model, env["dirs"]["a2"]) == "reloaded-adapter"
    env["torch"].testing.assert_close(logits(env, model), reference(env, "a2"), atol=1e-5, rtol=0)
    assert swap_adapter(model, env["dirs"]["a1"]) == "hotswap"


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("missing", "no such LoRA adapter directory"),
        ("a1/adapter_config.json", "is a file, expected a LoRA adapter directory"),
        ("empty", "no adapter_config.json"),
        ("ia3", "not a LoRA adapter (peft_type 'IA3')"),
        ("narrow", "does not fit this base model"),
        ("deep", "LoRA tensors saved"),
    ],
)
def test_bad_adapter_dirs(env: dict[str, Any], name: str, needle: str) -> None:
    from peft.tuners.tuners_utils import BaseTunerLayer

    from scaffold.providers.lora import adapter_fingerprint, attach_adapter, swap_adapter

    path = env["dirs"].get(name, env["root"] / name)
    base = fresh(env)
    with pytest.raises(SpecError) as err:
        attach_adapter(base, path)
    assert needle in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)
    # the failed attach left the base as it was: no LoRA layers, same logits, attachable
    assert not any(isinstance(m, BaseTunerLayer) for m in base.modules())
    env["torch"].testing.assert_close(logits(env, base), logits(env, env["base"]))
    model = attach_adapter(base, env["dirs"]["a1"])
    with pytest.raises(SpecError) as err:
        swap_adapter(model, path)
    assert str(path) in str(err.value)
    env["torch"].testing.assert_close(logits(env, model), reference(env, "a1"), atol=1e-5, rtol=0)
    assert list(model.peft_config) == ["default"]
    if name in ("missing", "empty"):
        with pytest.raises(SpecError) as err:
            adapter_fingerprint(path)
        assert str(path) in str(err.value)


def test_fingerprint(env: dict[str, Any]) -> None:
    from scaffold.providers.lora import adapter_fingerprint

    a1, a2 = adapter_fingerprint(env["dirs"]["a1"]), adapter_fingerprint(env["dirs"]["a2"])
    assert a1 == adapter_fingerprint(str(env["dirs"]["a1"])) and a1 != a2
    assert len(a1) == 12 and int(a1, 16) >= 0


def test_legacy_bin_adapter_loads_by_reloading(env: dict[str, Any]) -> None:
    from scaffold.providers.lora import attach_adapter, swap_adapter

    assert (env["dirs"]["a2bin"] / "adapter_model.bin").is_file()
    env["torch"].testing.assert_close(reference(env, "a2bin"), reference(env, "a2"), atol=1e-5, rtol=0)
    model = attach_adapter(fresh(env), env["dirs"]["a1"])
    assert swap_adapter(model, env["dirs"]["a2bin"]) == "reloaded-adapter"  # no header to check shapes
    env["torch"].testing.assert_close(logits(env, model), reference(env, "a2"), atol=1e-5, rtol=0)


# ---------------------------------------------------------------- the hf provider


async def test_hf_spec_with_lora_loads_the_adapter_and_swaps_it_in_place(env: dict[str, Any], tmp_path: Path) -> None:
    """`hf:BASE+lora:DIR` serves base + adapter; `swap_adapter` changes outputs, not the base."""
    from scaffold.messages import Message
    from scaffold.providers import build_model
    from scaffold.providers.lora import adapter_fingerprint
    from scaffold.secrets import SecretRegistry

    hf = pytest.importorskip("hf_fixtures")
    base_dir = tmp_path / "base"
    env["base"].save_pretrained(base_dir)
    hf.packaged_tokenizer().save_pretrained(base_dir)
    policy = build_model(parse_model_string(f"hf:{base_dir}+lora:{env['dirs']['a1']}+max_tokens:6"), SecretRegistry())
    assert policy.policy_version == adapter_fingerprint(env["dirs"]["a1"])
    assert env["torch"].allclose(logits(env, policy.model), reference(env, "a1"), atol=1e-5)
    before = base_params(policy.model)
    reply = await policy.generate([Message(role="user", content="hi")])
    assert reply.tokens.policy_version == adapter_fingerprint(env["dirs"]["a1"])

    version = await policy.swap_adapter(str(env["dirs"]["a2"]))
    assert version == adapter_fingerprint(env["dirs"]["a2"]) != reply.tokens.policy_version
    assert env["torch"].allclose(logits(env, policy.model), reference(env, "a2"), atol=1e-5)
    assert base_params(policy.model) == before  # no reload of the base
    after = await policy.generate([Message(role="user", content="hi")])
    assert after.tokens.policy_version == version
