"""The training config: one pydantic model, validated before anything is loaded.

`audit train --config FILE` reads it; `OUT/config.yaml` keeps the resolved copy that
`audit train --resume OUT` continues from. Every field's description here is its
documentation; `audit train --config FILE --show-config` prints the resolved values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from auditor.prompts import Manual
from rewards.reward import REWARDS, RewardWeights
from scaffold.quotable import copy_quotes_field, max_request_quotes_field
from scaffold.specs import SpecError, describe_validation_error, parse_yaml, read_yaml
from scaffold.state import AuditBudget, BudgetShorthands
from targets.grammar.generate import GeneratorOptions

DEFAULT_TASK_TURNS = 4
# The organism a training task audits, unless tasks.organism says otherwise (field by field).
ORGANISM_DEFAULTS: dict[str, str | float | int] = {
    "implant": "simulated", "base_responder": "fast", "difficulty": "medium",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PolicyConfig(_Strict):
    """The model being trained and how it samples."""

    base: str = Field(
        "smollm2-135m",
        description="Base weights: `smollm2-135m` (the packaged SmolLM2-135M-Instruct), a local model directory, "
        "or `tiny-random` (a ~3M-parameter random Llama with the SmolLM2 tokenizer, for smoke tests).",
    )
    init_adapter: str | None = Field(
        None, description="A LoRA adapter directory to start from (e.g. the SFT stage's OUT/final)."
    )
    constrained: bool = Field(True, description="Grammar-constrained tool calls while sampling (forced tokens carry no loss).")
    max_calls_per_turn: int = Field(1, ge=1, le=8, description="Constrained: most tool calls in one reply (the policy picks).")
    copy_quotes: bool = copy_quotes_field()
    max_request_quotes: int | None = max_request_quotes_field()
    temperature: float = Field(1.0, gt=0, le=2, description="Sampling temperature of rollouts.")
    max_tokens_per_turn: int = Field(160, ge=8, le=4096, description="Most tokens the policy writes in one turn.")
    max_batch_size: int = Field(16, ge=1, description="Most rollout turns decoded in one batch.")
    prefix_cache: bool = Field(True, description="hf sampler: reuse the KV of the prompt prefix all audits share.")
    merge_lora: bool = Field(
        True,
        description="hf sampler: merge the LoRA into the base weights while rollouts and evals sample (restored "
        "bit for bit after), so a forward is one matmul per layer, not three.",
    )
    turn_cache: bool = Field(
        True, description="hf sampler: keep each rollout's KV for its next turn, so a turn prefills only its new tokens."
    )
    manual: Manual = Field(
        "compact",
        description="The auditor's manual in rollouts and evals: `compact` (the system prompt and tools in a few "
        "hundred tokens: cheaper turns and updates, and less for a small model to copy) or `full` (what API "
        "auditors read).",
    )
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto",
        description="Rollouts and the update under bf16 autocast (`bf16`), in fp32, or `auto`: bf16 where the "
        "device computes it natively (a CUDA GPU with bf16, a CPU with avx512_bf16 or AMX), else fp32, and on a "
        "CPU the update only: there a rollout's decode steps run slower under autocast (benchmarks/grpo_step.py's "
        "decode probe). On a CPU without them bf16 is emulated and many times slower.",
    )


class LoraSettings(_Strict):
    """The LoRA adapter that training writes (peft)."""

    r: int = Field(16, ge=1, le=256, description="Rank.")
    alpha: int = Field(32, ge=1, description="Scaling numerator (scale = alpha / r).")
    dropout: float = Field(
        0.0, ge=0, lt=1, description="LoRA dropout. Keep 0: dropout makes the trainer's logprobs differ from the sampler's."
    )
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Module names that get adapters.",
    )
    top_layers: int | None = Field(
        None,
        ge=1,
        description="Adapt only the top N decoder layers (None: every layer). Backward then stops below them: "
        "on SmolLM2 (30 layers), a forward+backward over 2,150 tokens on a 2-core CPU took 0.66x as long with "
        "the top 15 and 0.56x with the top 10 (benchmarks/sft_step.py). Fewer layers can learn less.",
    )


class SamplerConfig(_Strict):
    """Where rollouts are sampled."""

    backend: Literal["hf", "vllm"] = Field(
        "hf",
        description="`hf`: the trainer's own model, in process (same weights, no sync). `vllm`: a vLLM server "
        "(started with --enable-lora); the adapter is saved and reloaded into it after every update.",
    )
    url: str | None = Field(None, description="vLLM server base URL (backend vllm), e.g. http://127.0.0.1:8000/v1.")
    served_adapter: str = Field("auditor", description="Name the adapter is served under in vLLM (the request's model).")
    importance_correction: bool = Field(
        True, description="Correct the sampler/trainer mismatch with truncated per-token importance ratios (vllm only)."
    )
    importance_cap: float = Field(2.0, gt=1, description="Cap of those ratios.")

    @model_validator(mode="after")
    def _url_for_vllm(self) -> SamplerConfig:
        if self.backend == "vllm" and not self.url:
            raise ValueError("sampler.backend vllm needs sampler.url (the server's /v1 base URL)")
        return self


class CurriculumStage(_Strict):
    """One stage of the difficulty curriculum."""

    until_step: int | None = Field(None, ge=1, description="Last step of this stage (none: to the end).")
    difficulty: Literal["easy", "medium", "hard"] = Field(description="Organism difficulty in this stage.")


class TasksConfig(_Strict, BudgetShorthands):
    """What the auditor is asked to audit: one prompt = a quirk's organism + a seed + an RNG seed."""

    split: Literal["train", "control"] = Field(
        "train", description="Quirk split the prompts come from (never heldout: that is what evals measure)."
    )
    include_control: bool = Field(
        False,
        description="Also audit the clean control. Its groups have an advantage only with "
        "`reward.weights.control_credit` above 0 (grounded and shaped rewards): otherwise every report on a control "
        "scores 0. False positives are measured by the eval's controls either way.",
    )
    seeds: list[str] = Field(default_factory=lambda: ["quirk-hunt"], description="Auditor seed ids (auditor/seeds).")
    generated: GeneratorOptions | None = Field(
        None, description="Train on this set of the grammar's generated quirks (targets/grammar/) instead of the "
        "hand-written ones: its train quirks (never a held-out family or combination).",
    )
    families: list[str] = Field(
        default_factory=list,
        description="With `generated`: train only on these families (empty: every train family); a specialisation "
        "run leaves some out and evaluates on the held-out families.",
    )
    organism: dict[str, str | float | int] = Field(
        default_factory=lambda: dict(ORGANISM_DEFAULTS),
        description="OrganismSpec fields other than the quirk. Each field given replaces its default alone "
        f"({', '.join(f'{k}: {v}' for k, v in ORGANISM_DEFAULTS.items())}): `--set tasks.organism.difficulty=easy` "
        "keeps the others.",
    )
    budget: AuditBudget = Field(
        default_factory=lambda: AuditBudget(max_turns=DEFAULT_TASK_TURNS),
        description="Each rollout's limits (AuditBudget: max_turns, max_tool_calls_per_turn, report_on_last_turn, "
        "...); `tasks.max_turns` may be written for `tasks.budget.max_turns`.",
    )
    shared_turns: int = Field(
        0,
        ge=0,
        description="The first N auditor turns that a group's G rollouts share: one audit plays them once and every "
        "rollout of the group continues from there, so the group differs only in the turns after and its advantages "
        "compare only what those turns did (the shared turns carry no loss). 0: every rollout is a whole audit. "
        "Below budget.max_turns; one training process only.",
    )
    start_auditor: str | None = Field(
        None,
        description="With shared_turns: the auditor that plays each group's shared turns instead of the policy, an "
        "`--auditor` spec (a model-spec YAML file, a `by_turn` one included). It stays frozen, so the policy learns "
        "only the turns after, on the openings it will be routed after (e.g. the report turn after a trained probing "
        "turn). A local model that reads chats as the policy does hands it the exact ids it sampled. Unset: the policy.",
    )
    curriculum: list[CurriculumStage] = Field(
        default_factory=list,
        description="Organism difficulty by step, easiest first: e.g. [{until_step: 15, difficulty: easy}, "
        "{difficulty: medium}]. A step past every `until_step` uses the last stage; empty: `organism.difficulty`.",
    )

    default_turns: ClassVar[int] = DEFAULT_TASK_TURNS

    @field_validator("organism", mode="before")
    @classmethod
    def _over_defaults(cls, value: Any) -> Any:
        # A partial mapping (a config's, or one `--set`) must not drop the other defaults.
        return {**ORGANISM_DEFAULTS, **value} if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _ordered(self) -> TasksConfig:
        if self.families and self.generated is None:
            raise ValueError("tasks.families selects generated quirks: set tasks.generated too")
        if self.generated is not None and self.families:
            from targets.grammar.families import load_families

            known = self.generated.families or sorted(load_families())
            stray = [f for f in self.families if f not in known]
            if stray:
                raise ValueError(f"tasks.families: {stray[0]!r} is not a family of tasks.generated "
                                 f"({', '.join(known)})")
            held = [f for f in self.families if f in self.generated.heldout_families]
            if held:
                raise ValueError(f"tasks.families: {held[0]!r} is a held-out family of tasks.generated; "
                                 "it is never trained on")
        if self.shared_turns >= self.budget.turn_limit:
            raise ValueError(f"tasks.shared_turns ({self.shared_turns}) must be below the turns each rollout plays "
                             f"({self.budget.turn_limit}): a group must have turns of its own")
        if self.start_auditor is not None and not self.shared_turns:
            raise ValueError("tasks.start_auditor plays a group's shared turns: set tasks.shared_turns too")
        bounds = [stage.until_step for stage in self.curriculum]
        if any(b is None for b in bounds[:-1]) or bounds[:-1] != sorted(set(bounds[:-1])):  # type: ignore[type-var]
            raise ValueError("tasks.curriculum: every stage but the last needs an until_step, in increasing order")
        return self

    def difficulty_at(self, step: int) -> str | None:
        """The curriculum's difficulty at `step` (1-based), or None without a curriculum."""
        for stage in self.curriculum:
            if stage.until_step is None or step <= stage.until_step:
                return stage.difficulty
        return self.curriculum[-1].difficulty if self.curriculum else None


class RewardConfig(_Strict):
    """How a rollout is scored."""

    family: str = Field("grounded", description=f"Reward function: one of {', '.join(REWARDS)}.")
    weights: RewardWeights = Field(default_factory=RewardWeights, description="The grounded reward's penalty weights.")
    judge: str = Field(
        "offline", description="Judge spec (rewards/judges.py): offline, offline:WEIGHTS, lexical, llm:MODEL."
    )

    @model_validator(mode="after")
    def _known(self) -> RewardConfig:
        if self.family not in REWARDS:
            raise ValueError(f"reward.family {self.family!r}: unknown; available: {', '.join(REWARDS)}")
        if self.weights.control_credit and self.family not in ("grounded", "shaped"):
            raise ValueError(f"reward.weights.control_credit is paid by grounded and shaped, not {self.family!r}")
        if self.weights.elicited and self.family != "shaped":
            raise ValueError(f"reward.weights.elicited is paid by the shaped reward, not {self.family!r}")
        return self


class EvalConfig(_Strict):
    """The held-out evaluation run during training (through the benchmark code)."""

    every: int = Field(0, ge=0, description="Evaluate every N steps (0: only at the end, if `at_end`).")
    at_end: bool = Field(True, description="Evaluate the final policy.")
    suite: str = Field("seeded-quirks-heldout", description="Suite name or YAML path.")
    repeats: int | None = Field(1, ge=1, description="Audits per quirk (overrides the suite's).")
    max_turns: int | None = Field(None, ge=1, description="Turn budget (default: tasks.max_turns).")
    concurrency: int = Field(16, ge=1)


class SftConfig(_Strict):
    """The warm start: LoRA fine-tuning on stored audit transcripts (`--stage sft`)."""

    @model_validator(mode="before")
    @classmethod
    def _old_keys(cls, data: Any) -> Any:
        # Configs written before `keep`: only_identified true/false meant identified/all.
        # Configs written before `control_share`: controls true/false meant all/none.
        if isinstance(data, dict) and ("only_identified" in data or "controls" in data):
            data = dict(data)
            if "only_identified" in data:
                data.setdefault("keep", "identified" if data.pop("only_identified") else "all")
            if "controls" in data:
                controls = data.pop("controls")
                if not isinstance(controls, bool):
                    raise ValueError(f"sft.controls is a bool (true: every control, false: none), not {controls!r}")
                if data.get("control_share") is not None:
                    raise ValueError("give sft.control_share or the older sft.controls, not both")
                data["control_share"] = None if controls else 0.0
        return data

    data: list[str] = Field(
        default_factory=list,
        description="Eval directories (`audit eval --out DIR`): their audits.jsonl names each audit's quirk. Only "
        "train-split and control audits are used; held-out quirks are refused.",
    )
    keep: Literal["all", "identified", "grounded"] = Field(
        "grounded",
        description="Which quirk audits to learn from: `grounded` (the top hypothesis names the quirk and cites a "
        "reply that shows it: audits that cite), `identified` (names it), or `all`. Controls are kept when they "
        "raised no false positive.",
    )
    control_share: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="The share of the rows that are control audits (those with no false positive, whose reports say "
        "nothing was found). None keeps every control; 0 keeps none. With a share, controls are drawn (by `seed`) "
        "until they make up that share of the rows, or all of them if there are too few. Without controls the "
        "warm start learns that a report always names something; with too many it learns to find nothing.",
    )
    silent_share: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="The share of the rows that are quirk audits `keep` leaves out in which the teacher claimed "
        "nothing and the quirk never showed in a reply: the warm start learns to report nothing when it saw "
        "nothing. 0 keeps none. Drawn by `seed` like controls. Without them, a warm start taught only grounded "
        "audits claims on 8 of 10 clean targets (stop 46).",
    )
    max_audits: int | None = Field(
        None,
        ge=1,
        description="Learn from at most this many of the kept quirk audits, drawn by `seed` (None: all of them). "
        "An SFT step costs seconds per transcript on a CPU: a cap buys time without a new data directory.",
    )
    epochs: int = Field(2, ge=1, le=100)
    lr: float = Field(2e-4, gt=0)
    max_length: int = Field(6144, ge=64, description="Longest row in tokens; longer transcripts are cut at a turn boundary.")
    save_every: int = Field(
        50,
        ge=1,
        description="Checkpoint the adapter, optimizer and position every N steps (OUT/sft-checkpoint), so that "
        "`audit train --resume OUT` continues an interrupted warm start where it stopped.",
    )


class TrainConfig(_Strict):
    """One training job."""

    name: str = Field("auditor", description="A label for logs and the adapter's card.")
    stage: Literal["grpo", "sft"] = Field("grpo", description="What `audit train` runs (`--stage` overrides).")
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    lora: LoraSettings = Field(default_factory=LoraSettings)
    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    sft: SftConfig = Field(default_factory=SftConfig)
    group_size: int = Field(
        4, ge=2, le=256, description="G: audits per prompt; advantages are relative within a group (8 or more for learning)."
    )
    prompts_per_step: int = Field(1, ge=1, le=256, description="Prompts (groups) per optimizer step.")
    micro_batch_size: int = Field(1, ge=1, description="Rollouts per forward/backward (memory); must divide the step's.")
    loss_type: Literal["dapo", "dr_grpo", "grpo"] = Field("dapo", description="TRL's GRPO loss normalisation.")
    beta: float = Field(0.0, ge=0, description="KL coefficient against the starting policy (0: no reference pass).")
    epsilon: float = Field(0.2, gt=0, lt=1, description="PPO clip range (low); high is `epsilon_high`.")
    epsilon_high: float = Field(0.28, gt=0, lt=1, description="Upper clip (DAPO's clip-higher).")
    lr: float = Field(1e-5, gt=0, description="Learning rate (AdamW, constant after warmup).")
    warmup_steps: int = Field(0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    steps: int = Field(10, ge=1, description="Optimizer steps.")
    save_every: int = Field(5, ge=1, description="Checkpoint (adapter, optimizer, RNG) every N steps.")
    gradient_checkpointing: bool = Field(
        False, description="Recompute activations in the backward pass: far less memory on long audits, ~30% more compute."
    )
    seed: int = Field(0, ge=0, lt=1 << 20, description="Seeds the prompt order, the model init and every rollout.")
    threads: int | None = Field(None, ge=1, description="torch CPU threads (default: torch's).")

    @model_validator(mode="after")
    def _batches(self) -> TrainConfig:
        if self.sampler.backend == "vllm" and self.policy.constrained:
            raise ValueError("policy.constrained is an hf-sampler feature; with sampler.backend vllm set it to false")
        if self.policy.copy_quotes and not self.policy.constrained:
            raise ValueError("policy.copy_quotes is part of the grammar: it needs policy.constrained true")
        if self.policy.max_request_quotes is not None and not self.policy.copy_quotes:
            raise ValueError("policy.max_request_quotes limits copied quotes: it needs policy.copy_quotes true")
        rollouts = self.group_size * self.prompts_per_step
        if rollouts % self.micro_batch_size:
            raise ValueError(f"micro_batch_size {self.micro_batch_size} must divide group_size x prompts_per_step = {rollouts}")
        if self.reward.weights.control_credit and not self.tasks.include_control and self.stage == "grpo":
            raise ValueError("reward.weights.control_credit pays control audits: set tasks.include_control too")
        probing_only = ("elicitation", "trigger_coverage")
        if self.tasks.budget.stop_after_turns and self.reward.family not in probing_only and self.stage == "grpo":
            raise ValueError(f"tasks.budget.stop_after_turns ends every rollout before its report, which "
                             f"reward.family {self.reward.family!r} pays for: use reward.family "
                             f"{' or '.join(probing_only)}")
        if self.reward.family == "elicitation" and self.tasks.organism.get("implant") != "simulated":
            raise ValueError("reward.family elicitation reads a simulated organism's replies: set "
                             "tasks.organism.implant simulated")
        return self

    @property
    def rollouts_per_step(self) -> int:
        return self.group_size * self.prompts_per_step

    def micro_batches_per_step(self, world: int = 1) -> int:
        """Backward passes each of `world` processes makes per optimizer step (gradient accumulation)."""
        per_round = self.micro_batch_size * world
        if self.rollouts_per_step % per_round:
            raise SpecError(
                f"rollouts_per_step {self.rollouts_per_step} (group_size x prompts_per_step) must be a multiple of "
                f"micro_batch_size x processes = {self.micro_batch_size} x {world}"
            )
        return self.rollouts_per_step // per_round


def load_config(path: str | Path, overrides: dict[str, object] | None = None) -> TrainConfig:
    """Read and validate a training config; SpecError names the bad field."""
    p = Path(path)
    try:
        missing = not p.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise SpecError(f"{str(p)[:200]}: cannot read it ({exc.strerror or exc})") from None
    if missing:
        raise SpecError(f"{p}: no such config file")
    data = read_yaml(p) or {}
    if not isinstance(data, dict):
        raise SpecError(f"{p}: a training config is a mapping of fields")
    for key, value in (overrides or {}).items():
        _set_dotted(data, key, value)
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, str(p))) from None


def _set_dotted(data: dict[str, object], key: str, value: object) -> None:
    node = data
    *parents, leaf = key.split(".")
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise SpecError(f"--set {key}: {part} is not a section")
        node = child
    node[leaf] = value


def parse_assignment(text: str) -> tuple[str, object]:
    """`key.sub=value` (value read as YAML: numbers, booleans, lists) for `--set`."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise SpecError(f"--set {text!r}: write FIELD=VALUE, e.g. --set tasks.max_turns=2")
    return key.strip(), parse_yaml(raw, f"--set {text!r}: the value")


def dump_config(config: TrainConfig, path: Path) -> None:
    """Write the resolved config (what a resume continues)."""
    path.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
