"""The price table: lookups by model name, costs with cached tokens, overrides and files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracejudge.models import DEFAULT_PRICES, Price, PriceTable, load_prices


def test_a_dated_or_prefixed_model_name_finds_its_price() -> None:
    table = PriceTable()
    assert table.get("gpt-4.1-mini-2025-04-14") == DEFAULT_PRICES["gpt-4.1-mini"]
    assert table.get("claude-sonnet-4-5-20250929") == DEFAULT_PRICES["claude-sonnet-4-5"]
    assert table.get("openai/GPT-4.1") == DEFAULT_PRICES["gpt-4.1"]
    assert table.get("my-local-model") is None and table.get(None) is None
    assert "gpt-4o" in table and "llama3.1:8b" not in table


def test_cached_and_cache_written_tokens_are_billed_at_their_rates() -> None:
    price = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    # 1M prompt tokens: 600k read from the cache, 100k written to it, 300k fresh.
    dollars = price.cost(1_000_000, 0, cached_input_tokens=600_000, cache_write_tokens=100_000)
    assert dollars == pytest.approx(0.3 * 3.0 + 0.6 * 0.3 + 0.1 * 3.75)
    assert price.cost(0, 1_000_000) == pytest.approx(15.0)
    # Counts that do not add up never give a negative or inflated cost.
    assert price.cost(100, 0, cached_input_tokens=500) == pytest.approx(100 * 0.3 / 1e6)
    assert Price(input=1.0, output=2.0).cost(1000, 0, cached_input_tokens=1000) == 1000 / 1e6


def test_unknown_models_have_no_cost_and_overrides_win() -> None:
    table = PriceTable(
        {"my-finetune": {"input": 1, "output": 2}, "gpt-4.1": {"input": 0, "output": 0}}
    )
    assert table.cost("my-finetune", 1_000_000, 500_000) == pytest.approx(2.0)
    assert table.cost("gpt-4.1-2025-04-14", 1000, 1000) == 0.0
    assert table.cost("unknown", 1000, 1000) is None


def test_a_prices_file_extends_the_shipped_table_and_bad_ones_name_the_field(
    tmp_path: Path,
) -> None:
    good = tmp_path / "prices.json"
    good.write_text(json.dumps({"local-judge": {"input": 0.1, "output": 0.2, "cached_input": 0}}))
    table = load_prices(good)
    assert table.get("local-judge") == Price(input=0.1, output=0.2, cached_input=0.0)
    assert table.get("gpt-4.1-mini") == DEFAULT_PRICES["gpt-4.1-mini"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"m": {"input": -1, "output": 2}}))
    with pytest.raises(ValueError, match=r"bad.json: prices\['m'\]\.input: expected a number"):
        load_prices(bad)
    bad.write_text(json.dumps({"m": {"input": 1, "outptu": 2}}))
    with pytest.raises(ValueError, match="unknown field 'outptu'"):
        load_prices(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="expected an object of models"):
        load_prices(bad)
    with pytest.raises(ValueError, match="cannot read it"):
        load_prices(tmp_path / "missing.json")
