"""The message types that cross every boundary: models, transcript, store.

Kept deliberately small and provider-neutral. Providers translate to and from
their wire formats; nothing above `scaffold/providers` sees a wire format.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["system", "user", "assistant", "tool"]


def scrub_text(value: Any) -> Any:
    """Replace lone surrogates (which JSON decoding can produce and UTF-8 cannot store).

    Model output is untrusted; one unencodable character must not break the store.
    Works through nested lists and dicts (tool-call arguments).
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [scrub_text(v) for v in value]
    if isinstance(value, dict):
        return {scrub_text(k): scrub_text(v) for k, v in value.items()}
    return value


class ToolCall(BaseModel):
    """A request by a model to call a tool. `arguments` is already parsed JSON."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Set when the provider could not parse the call; the tool layer turns it into an error.
    parse_error: str | None = None

    @field_validator("id", "name", "arguments")
    @classmethod
    def _scrub(cls, value: Any) -> Any:
        return scrub_text(value)


class ToolParameter(BaseModel):
    """One parameter of a tool, in a provider-neutral form."""

    name: str
    type: str = "string"  # a JSON-schema type name
    description: str = ""
    required: bool = True
    enum: list[str] | None = None
    items: dict[str, Any] | None = None  # JSON schema of array items, for type == "array"


class ToolDefinition(BaseModel):
    """A tool a model may call: name, what it does, and its parameters."""

    name: str
    description: str
    parameters: list[ToolParameter] = Field(default_factory=list)

    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON-schema object, the shape every provider takes."""
        props: dict[str, Any] = {}
        for p in self.parameters:
            prop: dict[str, Any] = {"type": p.type, "description": p.description} if p.description else {"type": p.type}
            if p.enum:
                prop["enum"] = p.enum
            if p.type == "array":
                prop["items"] = p.items or {"type": "string"}
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.parameters if p.required],
        }

    def brief(self) -> ToolDefinition:
        """The same tool, described by its summary line only and with undocumented parameters.

        A compact manual (auditor/prompts.py) shows small local policies these: the same
        name, parameters and schema, in a fraction of the tokens.
        """
        summary = self.description.strip().split("\n\n")[0].replace("\n", " ")
        parameters = [p.model_copy(update={"description": ""}) for p in self.parameters]
        return self.model_copy(update={"description": summary, "parameters": parameters})


class Message(BaseModel):
    """One chat message.

    `metadata` holds facts that only graders and reviewers may see (for example a
    seeded quirk's `fired` flag); it is never rendered into any model's prompt.
    """

    id: str = ""
    parent_id: str | None = None
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # for role == "tool": which call this answers
    is_error: bool = False  # for role == "tool": the result is an error
    prefill: str | None = None  # for role == "assistant": text the auditor put in the target's mouth
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content", "prefill")
    @classmethod
    def _scrub(cls, value: Any) -> Any:
        return scrub_text(value)


class Usage(BaseModel):
    """Token counts of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0
    # Attempts abandoned at their deadline before the call succeeded. A provider bills
    # the prompt it was sent, and a retry sends the same prompt, so `input_tokens`
    # counts it once per such attempt; what they generated never came back to count.
    timed_out_requests: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            timed_out_requests=self.timed_out_requests + other.timed_out_requests,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


class TokenRecord(BaseModel):
    """Exact tokens of one sampled turn, for training (see DESIGN.md, training data path)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    # log_softmax(logits / T)[id] of each completion token under the model itself (no
    # grammar mask): what a trainer recomputes from the same weights.
    completion_logprobs: list[float] | None = None
    # 1 where the policy chose the token, 0 where a grammar forced it (constrained
    # decoding with a single allowed token). None means every token was the policy's.
    completion_mask: list[int] | None = None
    policy_version: str | None = None
    rollout_id: str | None = None


class ModelResponse(BaseModel):
    """What a `ChatModel.generate` call returns."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""
    stop_reason: str | None = None
    tokens: TokenRecord | None = None


# The argument (of record_finding, and of each submit_report hypothesis) that cites
# target messages; `GenerateConfig.citable_ids` narrows it for constrained decoding.
CITED_IDS_ARGUMENT = "cited_message_ids"


class GenerateConfig(BaseModel):
    """Per-call generation settings. Unset fields fall back to the model's spec."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    # "user": sample the user's next turn instead of the assistant's (sample_user_turn).
    sample_as: Literal["assistant", "user"] = "assistant"
    # Which rollout (audit) this call belongs to. A token-level policy uses it to build
    # each prompt as an extension of the previous turn's exact ids (DESIGN.md, training
    # data path) and stamps it on the TokenRecord; other models ignore it.
    rollout_id: str | None = None
    # The rollout whose turns this one started from (scaffold.run.SharedStart: a training
    # group's shared first turns). Until this rollout has a turn of its own, a token-level
    # policy builds its prompt as an exact extension of that rollout's last turn.
    continues: str | None = None
    # The exact ids (prompt + completion) of this rollout's last auditor turn, from its
    # transcript. A token-level policy with no session for the rollout (a resumed audit: its
    # sessions lived in the dead process) extends them instead of re-encoding the history,
    # which gives other ids than a constrained policy sampled (token_prompts.PromptBuilder).
    last_turn_ids: tuple[int, ...] | None = None
    # The reply must call this tool (the audit's last turn asks for submit_report). API
    # providers send it as tool_choice, a constrained local policy's grammar allows only
    # this tool; a model that cannot enforce it still reads the scaffold's notice.
    required_tool: str | None = None
    # The ids of the target's real replies so far (the scaffold sets them on the auditor's
    # calls). A constrained local policy's grammar allows only these in `cited_message_ids`
    # and, when there are any, requires at least one: every citation it writes is real.
    citable_ids: tuple[str, ...] | None = None
    # What the target conversation holds that a report may quote (scaffold/quotable.py), each
    # with the ids of the replies that said it (none for a request): a constrained local policy
    # with `copy_quotes` may put only these between « and », and cites the replies it quoted.
    quotable: dict[str, tuple[str, ...]] | None = None

    def required_among(self, tools: Sequence[ToolDefinition]) -> ToolDefinition | None:
        """The offered tool the reply must call, or None (none required, or not offered)."""
        return next((t for t in tools if t.name == self.required_tool), None) if self.required_tool else None
