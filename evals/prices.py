"""What an audit's API tokens cost, from a price table (evals/prices.yaml by default)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scaffold.messages import Usage
from scaffold.specs import SpecError, describe_validation_error, load_yaml_file

DEFAULT_PRICES = Path(__file__).resolve().parent / "prices.yaml"


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="USD per million input tokens")
    output: float = Field(ge=0, description="USD per million output tokens")


class PriceTable(BaseModel):
    """Prices by model label; a key ending in '*' matches every label it starts."""

    model_config = ConfigDict(extra="forbid")

    as_of: str = ""
    models: dict[str, Price] = Field(default_factory=dict)

    def price(self, label: str) -> Price | None:
        """The price of `label`: an exact key first, then the longest matching prefix."""
        if label in self.models:
            return self.models[label]
        prefixes = [k for k in self.models if k.endswith("*") and label.startswith(k[:-1])]
        return self.models[max(prefixes, key=len)] if prefixes else None

    def cost(self, label: str, usage: Usage) -> float | None:
        """USD for `usage` of model `label`, or None when the table has no price for it."""
        price = self.price(label)
        if price is None:
            return None
        return (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The price table at `path` (default: the shipped one)."""
    where = Path(path) if path else DEFAULT_PRICES
    try:
        return PriceTable.model_validate(load_yaml_file(where))
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, str(where))) from None
