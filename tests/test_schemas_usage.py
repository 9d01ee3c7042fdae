"""The price list and the recorded token counts through their schema: prices finite and ≥ 0, usage ≥ 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccpt.errors import DataError
from ccpt.results.usage import Price, load_prices, read_usage


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{ input = inf, output = 10.0 }",
            r"openai/gpt-4o\.input: should be a finite number \(got inf\)",
        ),  # was accepted
        ("{ input = nan, output = 10.0 }", r"openai/gpt-4o\.input: should be a finite number"),
        ("{ input = 2.5, output = -1 }", r"openai/gpt-4o\.output: should be greater than or equal to 0 \(got -1\)"),
        ("{ input = true, output = 10.0 }", r"openai/gpt-4o\.input: a number is expected, not true/false"),
        ("{ input = 2.5, outptu = 10.0 }", r"openai/gpt-4o\.output: Field required"),
        ('"2.5"', r"openai/gpt-4o: should be a valid dictionary"),
        ('{ input = "10", output = 1 }', r"openai/gpt-4o\.input: should be a valid number \(got '10'\)"),  # was 10
    ],
    ids=["inf", "nan", "negative", "bool", "typo", "not-a-table", "quoted"],
)
def test_a_bad_price_is_one_line_naming_the_model_and_key(entry: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(f'"openai/gpt-4o" = {entry}\n', encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        load_prices(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_a_valid_price_list_is_read(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('"openai/gpt-4o" = { input = 2.5, output = 10 }\n"free/m" = { input = 0, output = 0 }\n')
    assert load_prices(path) == {"openai/gpt-4o": Price(2.5, 10.0), "free/m": Price(0.0, 0.0)}


def _log_with_usage(log_dir: Path, input_tokens: int, output_tokens: int) -> None:
    """A log whose every call records the given token counts (what a misbehaving provider could report)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelAPI, ModelOutput, ModelUsage, modelapi
    from inspect_ai.solver import generate

    @modelapi(name=f"ccpt-test-usage{input_tokens}")  # one provider per count: the registry keeps the first
    def _usage():
        class Usage(ModelAPI):
            async def generate(self, input, tools, tool_choice, config):
                output = ModelOutput.from_content(model=self.model_name, content="hi")
                output.usage = ModelUsage(
                    input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
                )
                return output

        return Usage

    task = Task(name="pi_emergent", dataset=[Sample(input="q", id=i) for i in (1, 2)], solver=generate())
    eval(task, model=f"ccpt-test-usage{input_tokens}/m", log_dir=str(log_dir), display="none")


def test_a_negative_usage_is_set_aside_and_counted_not_a_negative_cost(tmp_path: Path) -> None:
    """Before: input_tokens = -1000 gave a negative token total and a negative cost. Now the call's usage is not
    summed or priced, and the usage table counts it in its "Invalid usage" column."""
    from ccpt.report.tables.usage import usage_display

    _log_with_usage(tmp_path / "bad", -1000, 5)
    (row,) = read_usage([tmp_path / "bad"], {"ccpt-test-usage-1000/m": Price(2.5, 10.0)})
    assert (row.calls, row.input_tokens, row.output_tokens, row.cost, row.invalid_usage) == (2, 0, 0, 0.0, 2)
    table = usage_display([row])
    assert table.header[-1] == "Invalid usage (not counted)" and table.rows[0].cells[-1].value == 2
    cost = table.rows[0].cells[table.header.index("Cost (USD)")]
    assert cost.text == "≥ 0.0000"  # the unpriced calls make the cost a lower bound, and it says so

    _log_with_usage(tmp_path / "good", 1000, 5)
    (row,) = read_usage([tmp_path / "good"], {"ccpt-test-usage1000/m": Price(2.5, 10.0)})
    assert (row.input_tokens, row.output_tokens, row.invalid_usage) == (2000, 10, 0)
    assert row.cost == pytest.approx((2000 * 2.5 + 10 * 10.0) / 1e6)
    assert "Invalid usage (not counted)" not in usage_display([row]).header
