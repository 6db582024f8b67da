"""The grounding rules of grounded_numbers: what is a stated value, what grounds it."""

from __future__ import annotations

import pytest

from tests.timing import LINEAR, growth
from tracejudge.evaluation._checks.numbers import MAX_DERIVATION_INPUTS, Facts, mentions


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


@pytest.mark.parametrize(
    "answer",
    [
        "Here are the top 3 hotels: Sol, Mar and Luz.",
        "There are 2 options.",
        "Step 1: open the app. Step 2: tap Login.",
        "## 1. Overview\n### 2) Details",
        "She finished 1st; he came 3rd.",
        "It is the 21st century.",
        "The store is open 24/7, a 50/50 chance.",
        "The 5-day forecast: it rose 2x in 3-5 days.",
    ],
)
def test_counts_ordinals_and_idioms_are_not_stated_values(answer: str) -> None:
    assert mentions(answer) == []


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ("It is 5 °C.", "5 °C"),
        ("It costs $5.", "$5"),
        ("Walk 3 km.", "3 km"),
        ("About 7%.", "7%"),
        ("It is 2.5 now.", "2.5"),
        ("Ranked 15th.", "15th"),
    ],
)
def test_small_numbers_with_a_unit_or_decimals_are_values(answer: str, shown: str) -> None:
    assert [m.text for m in mentions(answer)] == [shown]


@pytest.mark.parametrize(
    ("answer", "source"),
    [
        ("Revenue was $1.2M in 2023.", '{"revenue": 1200000, "year": 2023}'),
        ("Revenue was $1.2M.", "revenue: 1.2 million USD"),
        ("Expect 18–22 °C.", '{"low": 18, "high": 22}'),
        ("The meeting is at 3 PM EST.", "meeting: 15:00 EST"),
        ("The meeting is at 3 o'clock.", "meeting: 15:00"),
        ("In 2024 it grew 15%.", '{"growth": 0.15, "date": "2024-02-01"}'),
        ("About 1000 users.", '{"users": "1,000"}'),
        ("It is 65°F (18°C).", '{"temp_f": 65, "temp_c": 18.3}'),
        ("Order #12345 shipped on Jan 3.", '{"order": 12345, "shipped": "2024-01-03"}'),
    ],
)
def test_common_answers_are_grounded(answer: str, source: str) -> None:
    result = _grounded(answer, source)
    assert result and all(result.values()), result


def test_the_unit_shown_is_a_unit_not_the_next_word() -> None:
    texts = [m.text for m in mentions("Hotel Sol costs 120 EUR, 15% below average, €25 per day.")]
    assert texts == ["120 EUR", "15%", "€25"]


@pytest.mark.heavy("measures the growth of the check on texts of up to thousands of values")
def test_many_values_in_long_texts_stay_linear() -> None:
    def texts(days: int) -> tuple[str, str]:
        """(an answer, its source): the source's dates, times and amounts, the answer
        naming every seventh amount of its first fifth."""
        source = " ".join(
            f"2024-01-{d % 28 + 1:02d} 10:{d % 60:02d} {d * 1.5}" for d in range(days)
        )
        answer = " ".join(f"{d * 1.5} on 2024-01-{d % 28 + 1:02d}" for d in range(0, days // 5, 7))
        return answer, source

    assert all(_grounded(*texts(10_000)).values())
    # eight times the text, about eight times the time (tests/timing.py), not sixty-four
    assert growth(lambda given: _grounded(*given), 1_250, make=texts) < LINEAR


@pytest.mark.parametrize(
    ("answer", "sources", "how"),
    [
        ("It is 40.", ("4", "Now multiply that by 10."), "4 × 10"),
        ("The total is 17 items.", ("8 apples", "9 pears"), "8 + 9"),
        ("About 41.7 km.", ("12.34 km", "then 29.4 km"), "12.34 + 29.4"),
        ("Revenue was $1.5 million.", ("500,000 a month", "for 3 months"), "500000 × 3"),
    ],
)
def test_a_sum_or_product_of_two_inputs_is_derived(
    answer: str, sources: tuple[str, ...], how: str
) -> None:
    facts = Facts.from_texts(sources)
    (stated,) = mentions(answer)
    assert not facts.grounds(stated)
    assert facts.derivation(stated) == how


@pytest.mark.parametrize(
    ("answer", "sources"),
    [
        ("It is 41.", ("4", "10")),  # neither 4 + 10 nor 4 × 10
        ("It is 80.", ("4", "10", "2")),  # 4 × 10 × 2: no chains
        ("It is 11.", ("10", "1")),  # 1 grounds no successor
    ],
)
def test_only_pairs_of_inputs_other_than_0_and_1_derive(
    answer: str, sources: tuple[str, ...]
) -> None:
    facts = Facts.from_texts(sources)
    (stated,) = mentions(answer)
    assert not facts.grounds(stated) and facts.derivation(stated) is None


def test_derivation_reads_only_the_first_source_numbers() -> None:
    many = [str(100 + i) for i in range(MAX_DERIVATION_INPUTS)]
    facts = Facts.from_texts([*many, "77", "1000"])  # past the cap
    (late,) = mentions("It is 77000.")
    assert facts.derivation(late) is None
    (early,) = mentions("It is 201.")  # 100 + 101
    assert facts.derivation(early) == "100 + 101"
    # Dates and times are never derived.
    (date,) = mentions("On March 5, 2024.")
    assert Facts.from_texts(["2024", "3", "5"]).derivation(date) is None


@pytest.mark.parametrize(
    ("answer", "stated"),
    [
        ("It failed with a 500 Internal Server Error.", []),
        ("The page gave HTTP 404, then 503 Service Unavailable.", []),
        ("We served 500 users.", ["500"]),
    ],
)
def test_http_status_codes_name_a_status_and_state_no_value(answer: str, stated: list[str]) -> None:
    assert [m.text for m in mentions(answer)] == stated
