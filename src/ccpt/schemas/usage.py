"""Schemas of what token accounting reads: the price list (TOML) and the token counts Inspect records per call."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, RootModel

from ccpt.schemas.base import Count, FileFormat, _no_bool

# Strict: TOML has numbers, so a quoted "10" is a slip to name, not a price to guess. At most $1,000,000 per 1M
# tokens (no model costs near that; 1e308 would make every cost "inf").
MAX_PRICE = 1_000_000
Dollars = Annotated[float, Field(ge=0, le=MAX_PRICE, allow_inf_nan=False, strict=True), BeforeValidator(_no_bool)]


class Price(BaseModel):
    """US dollars per one million tokens, for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: Annotated[Dollars, Field(description="$ per 1M input tokens")]
    output: Annotated[Dollars, Field(description="$ per 1M output tokens")]


class PriceList(RootModel[dict[str, Price]]):
    """A price list: model name → its price (``"openai/gpt-4o" = { input = 2.5, output = 10.0 }``)."""


class CallUsage(BaseModel):
    """The token counts Inspect recorded for one model call (``ModelOutput.usage``)."""

    model_config = ConfigDict(extra="ignore")

    input_tokens: Count = 0
    output_tokens: Count = 0


PRICES = FileFormat(
    "price list",
    Price,
    "ccpt report --prices, ccpt run --prices (the cost column and the --dry-run estimate)",
    'A TOML file with one entry per model name: `"openai/gpt-4o" = { input = 2.5, output = 10.0 }` '
    "(US dollars per one million input and output tokens). Each entry has the keys below.",
    rules=(
        "A price must be a finite number ≥ 0 and ≤ 1,000,000 (a quoted number, true/false, inf and nan are refused; "
        "no model costs near a million dollars per 1M tokens, and 1e308 would make every cost inf): one line names "
        "the model and key.",
        "A call whose recorded token counts are not counts (≥ 0) is not summed or priced; the usage table counts it.",
    ),
)
