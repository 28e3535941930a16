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
a model never reuses KV that another model's weights computed. A local route's first turn
still extends the exact ids the previous route sampled, as a single policy's turns do: the
scaffold hands every call the transcript's ids of the last turn (`GenerateConfig.last_turn_ids`).
Re-encoding the text instead gives other ids (the grammar forces `"` then `,` where the
tokenizer writes `",`), and an SFT report turn reading its audit in that foreign tokenization
claimed in 12/54 held-out audits instead of 48/54.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scaffold.messages import GenerateConfig, Message, ModelResponse, ToolDefinition
from scaffold.model import ChatModel, close_model
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
        self.first_turns = tuple(first_turns)
        # Turn k goes to the first model whose cumulative turn count exceeds k.
        bounds, total = [], 0
        for count in first_turns:
            total += count
            bounds.append(total)
        self._bounds = tuple(bounds)
        # The last turn's ids are in the vocabulary of the model that sampled them: a route
        # that reads chats differently must re-encode the history instead.
        self._reads_like_previous = tuple(
            i > 0 and reads_alike(self.models[i - 1], model) for i, model in enumerate(self.models)
        )

    def route_for(self, turn: int) -> int:
        """The index of the route that plays auditor turn `turn` (0-based)."""
        return next((i for i, bound in enumerate(self._bounds) if turn < bound), len(self._bounds))

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        config: GenerateConfig | None = None,
    ) -> ModelResponse:
        """Answer with the model routed to this call's turn."""
        turn = auditor_turn(messages)
        route = self.route_for(turn)
        first_of_route = turn > 0 and self.route_for(turn - 1) != route
        if first_of_route and config is not None and not self._reads_like_previous[route]:
            config = config.model_copy(update={"last_turn_ids": None})
        return await self.models[route].generate(messages, tools, config)

    async def aclose(self) -> None:
        """Close every routed model (close_model follows one `.base` chain, not a list)."""
        await asyncio.gather(*(close_model(model) for model in self.models))


def then(first: ChatModel, turns: int, rest: ChatModel) -> ByTurnChatModel:
    """An auditor whose first `turns` turns `first` plays and every later one `rest`.

    A `by_turn` model as `first` is flattened into its routes (its last route plays up to
    `turns`), so each route still hands its sampled ids to the next (`reads_alike` needs a
    model with one tokenizer)."""
    if turns < 1:
        raise ValueError(f"the first model plays at least one turn, not {turns}")
    if not isinstance(first, ByTurnChatModel):
        return ByTurnChatModel(f"{first.name}+{rest.name}", [first, rest], [turns])
    earlier = sum(first.first_turns)
    if turns <= earlier:
        raise ValueError(f"{first.name}: its routes play {earlier + 1} or more turns; it cannot play only {turns}")
    return ByTurnChatModel(f"{first.name}+{rest.name}", [*first.models, rest], [*first.first_turns, turns - earlier])


def reads_alike(first: ChatModel, second: ChatModel) -> bool:
    """Whether two token-level models turn a chat into the same ids (same vocabulary, chat
    template and tool-result role), so that one can extend the ids the other sampled."""
    a, b = getattr(first, "tokenizer", None), getattr(second, "tokenizer", None)
    if a is None or b is None or getattr(first, "tool_role", None) != getattr(second, "tool_role", None):
        return False
    return a is b or (a.chat_template == b.chat_template and a.get_vocab() == b.get_vocab())


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
    counts = [route.first_turns for route in options.turns[:-1]]
    return ByTurnChatModel(spec.label(), models, [count for count in counts if count is not None])
