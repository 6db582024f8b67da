"""The grounding rules of grounded_numbers: what is a stated value, what grounds it."""

from __future__ import annotations

import pytest

from tracejudge.evaluation._checks_numbers import Facts, mentions


def _grounded(answer: str, *sources: str) -> dict[str, bool]:
    facts = Facts.from_texts(sources)
    return {m.text: facts.grounds(m) for m in mentions(answer)}


@pytest.mark.parametrize(
    ("answer", "source"),
    [
        ("It is 65°F.", "temp: 65 F"),
        ("It is 65 F.", '{"temperature": 65}'),
        ("It is 65 degrees.", "65°F"),
        ("It costs 1,000 dollars.", '{"price": 1000}'),
        ("It costs $3.50.", '{"price": 3.5}'),
        ("Growth was 25%.", '{"growth": 0.25}'),
        ("Growth was 25 percent.", "growth 25%"),
        ("About 1.2 million people.", "population 1,234,567"),
        ("About 5k users.", "users: 5000"),
        ("Pi is 3.14.", "pi = 3.14159"),
        ("It is -5 °C.", '{"t": -5}'),
        ("On March 5th, 2024.", "date: 2024-03-05"),
        ("On 5 Mar 2024.", "2024-03-05T10:00:00Z"),
        ("On 03/05/2024.", "2024-03-05"),
        ("On 05/03/2024.", "2024-03-05"),
        ("On March 5.", "2024-03-05"),
        ("In March 2024.", "2024-03-05"),
        ("At 3:30 pm.", "15:30"),
        ("At 3pm.", "15:00:00"),
        ("At 15:30.", "3:30 PM"),
    ],
)
def test_differently_written_values_are_grounded(answer: str, source: str) -> None:
    result = _grounded(answer, source)
    assert result and all(result.values()), result


@pytest.mark.parametrize(
    ("answer", "source", "ungrounded"),
    [
        ("It is 72 F.", "65 F", "72 F"),
        ("Growth was 30%.", "growth 0.25", "30%"),
        ("On March 6, 2024.", "2024-03-05", "March 6, 2024"),
        ("On March 5, 2023.", "2024-03-05", "March 5, 2023"),
        ("At 4:30 pm.", "15:30", "4:30 pm"),
        ("Pi is 3.15.", "pi = 3.14159", "3.15"),
    ],
)
def test_wrong_values_are_named(answer: str, source: str, ungrounded: str) -> None:
    assert _grounded(answer, source) == {ungrounded: False}


def test_list_markers_citations_urls_and_names_are_not_values() -> None:
    answer = (
        "Results:\n1. Paris [1]\n2) Lima [2, 3]\n- see https://example.org/page/77\n"
        "Made with gpt-4o on a B2B H2O COVID-19 v2 dataset."
    )
    assert mentions(answer) == []


def test_repeated_values_count_once() -> None:
    assert [m.text for m in mentions("65 F now, 65 F later, and 65.0 F tonight.")] == ["65 F"]


def test_a_source_date_also_grounds_its_year() -> None:
    assert _grounded("Since 2019.", "2019-07-01") == {"2019": True}
