"""The `by_turn` provider: an auditor whose turns are played by different models, in order.

A policy trained on one turn of an audit (`AuditBudget.stop_after_turns`: the probing)
shares its adapter with the turns it was never trained on, so training can move those too
(stop 59: the report turn stopped claiming). Routing each turn to the model trained for it
keeps the other turns exactly where they were. It also lets a cheap local model probe and
an API model write the report.

    provider: by_turn
    model: coverage-probing+warm-start-report      # a name for reports
    extra:
      turns:
        - {first_turns: 1, model: probing.yaml}    # the audit's first auditor turn
        - {model: warm-start.yaml}                 # every later turn

Each `model` is what `--auditor` takes: a short string (`hf:smollm2-135m+lora:DIR`), a
model-spec YAML file, or an inline spec (relative paths are read from the working directory,
as in every spec). The turn a call belongs to is the number of the
auditor's own replies in the conversation it is shown, so routing needs no state and a
resumed audit routes as the uninterrupted one would have. Each model keeps its own caches:
a model never reuses KV that another model's weights computed. Local routes that read chats
alike share their token sessions, so a route's first turn extends the exact ids the previous
route sampled, as a single policy's turns do (`share_token_sessions`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scaffold.messages import GenerateConfig, Message, ModelResponse, ToolDefinition
from scaffold.model import ChatModel, close_model
from scaffold.providers.token_prompts import PromptBuilder
from scaffold.secrets import SecretRegistry
from scaffold.specs import (
    ModelSpec,
    SpecError,
    describe_validation_error,
    model_spec_from,
    model_spec_from_arg,
    spec_provider,
)


class TurnRoute(BaseModel):
    """One model and the consecutive auditor turns it plays."""

    model_config = ConfigDict(extra="forbid")

    model: str | dict[str, Any] = Field(
        description="The model for these turns: a short spec string, a model-spec YAML file, or an inline spec."
    )
    first_turns: int | None = Field(
        None, ge=1, description="How many turns this model plays after the earlier routes' (unset: all the rest)."
    )


class ByTurnOptions(BaseModel):
    """The `by_turn` provider's options, read from `ModelSpec.extra`."""

    model_config = ConfigDict(extra="forbid")

    turns: list[TurnRoute] = Field(
        min_length=2, description="The routes in turn order; every route but the last sets first_turns."
    )

    @model_validator(mode="after")
    def _last_route_takes_the_rest(self) -> ByTurnOptions:
        *earlier, last = self.turns
        if any(route.first_turns is None for route in earlier):
            raise ValueError("every route but the last needs first_turns (the turns it plays)")
        if last.first_turns is not None:
            raise ValueError("the last route plays every remaining turn: leave its first_turns unset")
        return self


def auditor_turn(messages: Sequence[Message]) -> int:
    """The 0-based index of the auditor turn a call asks for: the auditor's replies so far."""
    return sum(1 for message in messages if message.role == "assistant")


class ByTurnChatModel:
    """A ChatModel that hands each call to the model of the turn it belongs to."""

    def __init__(self, name: str, models: Sequence[ChatModel], first_turns: Sequence[int]) -> None:
        if len(first_turns) != len(models) - 1:
            raise ValueError("every model but the last needs its number of turns")
        self.name = name
        self.models = tuple(models)
        self.supports_prefill = all(model.supports_prefill for model in models)
        # Turn k goes to the first model whose cumulative turn count exceeds k.
        bounds, total = [], 0
        for count in first_turns:
            total += count
            bounds.append(total)
        self._bounds = tuple(bounds)

    def model_for(self, turn: int) -> ChatModel:
        """The model that plays auditor turn `turn` (0-based)."""
        index = next((i for i, bound in enumerate(self._bounds) if turn < bound), len(self._bounds))
        return self.models[index]

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        config: GenerateConfig | None = None,
    ) -> ModelResponse:
        """Answer with the model routed to this call's turn."""
        return await self.model_for(auditor_turn(messages)).generate(messages, tools, config)

    async def aclose(self) -> None:
        """Close every routed model (close_model follows one `.base` chain, not a list)."""
        await asyncio.gather(*(close_model(model) for model in self.models))


def share_token_sessions(models: Sequence[ChatModel]) -> None:
    """Give local routes that read chats alike one PromptBuilder (its per-rollout token sessions).

    Re-encoding a conversation's text does not give back the ids a constrained policy sampled:
    the grammar forces `"` then `,` where the tokenizer writes `",` (30 of ~340 ids of a first
    turn differ). A route that re-encoded its predecessor's turns would read its own audit in
    a tokenization it never saw in training (measured: the SFT report turn then claimed 12/54
    instead of 48/54). Sharing the sessions hands it the exact ids instead.
    """
    shared: list[PromptBuilder] = []
    for model in models:
        builder = getattr(model, "prompts", None)
        if not isinstance(builder, PromptBuilder):
            continue
        alike = next((other for other in shared if other.reads_like(builder)), None)
        if alike is None:
            shared.append(builder)
        else:
            model.prompts = alike  # type: ignore[attr-defined]


def _route_spec(route: TurnRoute, where: str) -> ModelSpec:
    if isinstance(route.model, str):
        return model_spec_from_arg(route.model, where)
    return model_spec_from(route.model, where)


def turn_providers(auditor_spec: str) -> tuple[str, ...]:
    """The providers that play an auditor's turns: each route's for a `by_turn` spec, else its
    own (`spec_provider`). A spec that cannot be read gives "": building it reports why."""
    provider = spec_provider(auditor_spec)
    if provider != "by_turn":
        return (provider,)
    try:
        options = ByTurnOptions.model_validate(model_spec_from_arg(auditor_spec).extra)
        return tuple(_route_spec(route, "route").provider for route in options.turns)
    except (SpecError, ValidationError):
        return ("",)


def build(spec: ModelSpec, secrets: SecretRegistry) -> ByTurnChatModel:
    """The provider registry's entry point: a ByTurnChatModel for a `by_turn` spec."""
    from scaffold.providers import build_model

    try:
        options = ByTurnOptions.model_validate(spec.extra)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, f"{spec.label()}: extra")) from None
    routes = [_route_spec(route, f"{spec.label()}: extra.turns[{i}].model") for i, route in enumerate(options.turns)]
    if any(route.provider == "by_turn" for route in routes):
        raise SpecError(f"{spec.label()}: a route cannot itself be a by_turn model")
    models = [build_model(route, secrets) for route in routes]
    share_token_sessions(models)
    counts = [route.first_turns for route in options.turns[:-1]]
    return ByTurnChatModel(spec.label(), models, [count for count in counts if count is not None])
