"""Numbers, dates and times in text, normalised so that differently written forms meet.

`mentions(answer)` finds what an answer states; `Facts.from_texts(sources)`
collects what the sources say; `Facts.grounds(mention)` decides whether a
stated value appears in the sources. The rules, in one place:

* numbers: thousands separators, trailing zeros, currency symbols, signs and
  units are dropped (`$1,000.50`, `1000.5 USD`; `65°F`, `65 F`, `65 degrees`,
  `65`); percentages match their fraction too (`25%` ~ `0.25`); `k`, `thousand`,
  `M`, `million`, `bn`, `billion` match the expanded value (`1.2M` ~ `1,200,000`);
  an answer may round a source value to the decimals it writes (`3.14` ~
  `3.14159`, `1.2 million` ~ `1,234,567`).
* dates: ISO (`2024-03-05`), numeric (`03/05/2024`, `5.3.24`: both day-month
  orders are tried), and with month names (`March 5th, 2024`, `5 Mar 2024`,
  `March 2024`). A date without a year matches that day in any year.
* times: `15:30`, `3:30 pm`, `3pm`, `3 o'clock`; a time without am/pm matches
  both halves of the day.
* not counted as stated numbers in an answer: list markers at the start of a
  line (`1.`, `2)`, `## 3.`), citation markers (`[1]`), numbers inside URLs,
  digits that are part of a word or name (`gpt-4o`, `H2O`, `COVID-19`, `v2`),
  idioms (`24/7`, `50/50`), and counts: a whole number from 0 to 10 written
  bare - no decimals, currency, percent, scale or unit of measure - such as
  `top 3`, `2 options`, `step 1`, `3-5`, and small ordinals (`1st`, `3rd`) and
  centuries (`21st century`). Such small numbers are usually the answer's own
  counting, not data; with a unit (`5 °C`, `$5`, `5 km`) they are checked.
  Numbers written as words ("sixty-five") are not recognised. HTTP status codes named
  with their reason phrase (`500 Internal Server Error`, `HTTP 404`) name a status,
  they state no quantity: not counted either.
* derived numbers (`Facts.derivation`): a number that is the sum or the product of two
  different numbers of the sources (`40` for "4" and "multiply by 10"), rounding
  allowed as above, counts as grounded, and is named as derived. Kept bounded and
  conservative: pairs only (no chains), the first `MAX_DERIVATION_INPUTS` distinct
  numbers of the sources as written (no scale expansions), and not 0 or 1 (which would
  ground any number or its successor).

Sources are read leniently (any digit run, even inside words, counts), answers
strictly, so that doubt falls on the side of "grounded".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal

from tracejudge.evaluation._checks.text import HTTP_REASONS

__all__ = ["MAX_DERIVATION_INPUTS", "Mention", "Facts", "mentions"]

#: How many distinct source numbers (the first, as written) derived values are built
#: from: their pairwise sums and products, about 2 x 40 x 39 / 2 = 1560 values at most.
MAX_DERIVATION_INPUTS = 40

DateValue = tuple[int | None, int, int | None]  # (year, month, day)
TimeValue = tuple[int, int]  # (hour 0-23, minute)

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = (
    r"(?P<{name}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_ORD = r"(?:st|nd|rd|th)?"

_ISO_DATE = re.compile(r"(?<!\d)(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?!\d)")
_NUMERIC_DATE = re.compile(
    r"(?<![\d.])(?P<a>\d{1,2})(?P<sep>[/.\-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})(?![\d])"
)
_MONTH_DAY = re.compile(
    r"\b" + _MONTH.format(name="mon") + r"\s+(?P<d>\d{1,2})" + _ORD + r"\b"
    r"(?:,?\s+(?P<y>\d{4})\b)?",
    re.IGNORECASE,
)
_DAY_MONTH = re.compile(
    r"\b(?P<d>\d{1,2})" + _ORD + r"\s+(?:of\s+)?" + _MONTH.format(name="mon") + r"(?![a-z])"
    r"(?:,?\s+(?P<y>\d{4})\b)?",
    re.IGNORECASE,
)
_MONTH_YEAR = re.compile(r"\b" + _MONTH.format(name="mon") + r"\s+(?P<y>\d{4})\b", re.IGNORECASE)
_CLOCK = re.compile(
    r"(?<![\d:])(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2}(?:\.\d+)?)?"
    r"(?:\s*(?P<ap>[ap])(?:\.m\.|m\b))?(?![\d:])",
    re.IGNORECASE,
)
_HOUR_AMPM = re.compile(r"(?<![\d:.])(?P<h>\d{1,2})\s*(?P<ap>[ap])(?:\.m\.|m\b)", re.IGNORECASE)
_OCLOCK = re.compile(r"(?<![\d:.])(?P<h>\d{1,2})\s*o[’']\s?clock\b", re.IGNORECASE)

_NUMBER_BODY = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_SCALE = (
    r"(?P<scale>\s*(?:%|percent\b|per\s*cent\b|k\b|thousand\b|m\b|mn\b|mm\b|million\b"
    r"|b\b|bn\b|billion\b|trillion\b))?"
)
# In answers: not glued to a word on the left (gpt-4, H2O, v2) nor to letters on the right
# unless they are a unit or scale (5kg, 65F pass; 4o, 3D-printed are kept as numbers of a
# unit, which is harmless).
_ANSWER_NUMBER = re.compile(
    r"(?<![A-Za-z_\d.,])(?<![A-Za-z_]-)(?<![A-Za-z_]\.)" + _NUMBER_BODY + _SCALE, re.IGNORECASE
)
_SOURCE_NUMBER = re.compile(r"(?<![\d.,])" + _NUMBER_BODY + _SCALE, re.IGNORECASE)

_LIST_MARKER = re.compile(r"^[ \t>*_#-]*(?:\*\*)?\d{1,3}[.)](?=\s)", re.MULTILINE)
_CITATION = re.compile(r"\[\d{1,3}(?:\s*[,\-–]\s*\d{1,3})*\]")
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
_IDIOM = re.compile(r"(?<![\d/])(?:24/7|50/50|9-to-5)(?![\d/])", re.IGNORECASE)
#: An HTTP status code with its reason phrase, or after "HTTP": a name, not a quantity.
_HTTP_STATUS = re.compile(
    r"\bHTTP(?:/\d(?:\.\d)?)?\s*[1-5]\d\d\b|\b[1-5]\d\d\s+(?:" + HTTP_REASONS + r")\b",
    re.IGNORECASE,
)

#: A unit of measure or currency written after a number ("65 °F", "12 km/h", "5 EUR"):
#: shown with the number, and what makes a small number a quantity rather than a count.
_UNIT_AFTER = re.compile(
    r"\s?(?:[°º]\s?[CFK]?(?![A-Za-z])|degrees?(?:\s+(?:[CF]|celsius|fahrenheit)\b)?"
    r"|(?:km/h|m/s|kph|mph|kmh|km|cm|mm|mi|miles?|kg|mg|lbs?|oz|ft|feet|inch(?:es)?"
    r"|kwh|kw|mw|mah|ml|gb|mb|kb|tb|ms|hpa|mbar|psi|knots?|[CFKWVgl]"
    r"|usd|eur|gbp|jpy|chf|cad|aud|dollars?|euros?|pounds?|yen)(?![A-Za-z]))",
    re.IGNORECASE,
)
_CURRENCY_BEFORE = re.compile(r"(?:[$€£¥₹]|USD\s?|EUR\s?|GBP\s?)$")
_ORDINAL_AFTER = re.compile(r"(?:st|nd|rd|th)\b(?P<century>\s+centur(?:y|ies))?", re.IGNORECASE)

#: Whole numbers up to this, written bare, are taken as counts (see the module docstring).
_MAX_COUNT = 10

_MULTIPLIERS: dict[str, tuple[Decimal, ...]] = {
    "%": (Decimal("0.01"),),
    "percent": (Decimal("0.01"),),
    "k": (Decimal(1000),),
    "thousand": (Decimal(1000),),
    "m": (Decimal(10) ** 6,),
    "mn": (Decimal(10) ** 6,),
    "mm": (Decimal(10) ** 6,),
    "million": (Decimal(10) ** 6,),
    "b": (Decimal(10) ** 9,),
    "bn": (Decimal(10) ** 9,),
    "billion": (Decimal(10) ** 9,),
    "trillion": (Decimal(10) ** 12,),
}


@dataclass(frozen=True)
class Mention:
    """One value an answer states: its text as written and its normalised forms."""

    text: str
    kind: Literal["number", "date", "time"]
    #: number: the written value; date: (year|None, month, day|None); time: (hour, minute).
    values: frozenset[object]
    #: number only: decimals written, and the scale multipliers the text implies.
    decimals: int = 0
    multipliers: tuple[Decimal, ...] = (Decimal(1),)

    @property
    def key(self) -> tuple[str, frozenset[object]]:
        return (self.kind, self.values)


@dataclass
class Facts:
    """The numbers, dates and times found in a set of source texts."""

    numbers: set[Decimal] = field(default_factory=set)
    dates: set[DateValue] = field(default_factory=set)
    times: set[TimeValue] = field(default_factory=set)
    #: The first `MAX_DERIVATION_INPUTS` distinct numbers as written, in order.
    written: dict[Decimal, None] = field(default_factory=dict, repr=False)
    _sorted: list[Decimal] | None = field(default=None, repr=False, compare=False)
    #: Derived value -> how ("4 × 10"), built on first use.
    _derived: dict[Decimal, str] | None = field(default=None, repr=False, compare=False)
    _derived_sorted: list[Decimal] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> Facts:
        facts = cls()
        for text in texts:
            if text:
                facts.add(text)
        return facts

    def add(self, text: str) -> None:
        """Take in what one more source text says."""
        for _, _, mention in _dates(text) + _times(text):
            if mention.kind == "date":
                self.dates.update(mention.values)  # type: ignore[arg-type]  # DateValues
            else:
                self.times.update(mention.values)  # type: ignore[arg-type]  # TimeValues
        # Every digit run counts, those inside dates and words included: lenient on purpose.
        for match in _SOURCE_NUMBER.finditer(text):
            value = _decimal(match.group("num"))
            if value is None:
                continue
            self.numbers.add(value)
            if len(self.written) < MAX_DERIVATION_INPUTS and value not in (0, 1):
                self.written[value] = None
            for multiplier in _multipliers(match.group("scale")):
                self.numbers.add((value * multiplier).normalize())
        self._sorted = None
        self._derived = self._derived_sorted = None

    def grounds(self, mention: Mention) -> bool:
        """Whether the sources state the mention's value (see the module docstring)."""
        if mention.kind == "date":
            return any(
                _date_matches(d, self.dates)  # type: ignore[arg-type]  # a date's: DateValues
                for d in mention.values
            )
        if mention.kind == "time":
            return bool(self.times & mention.values)
        if self._sorted is None:
            self._sorted = sorted(self.numbers)
        return _number_in(mention, self.numbers, self._sorted) is not None

    def derivation(self, mention: Mention) -> str | None:
        """How a number the sources do not state derives from two they do ("4 × 10"): their
        sum or product (see the module docstring); None when it does not, or for a date
        or a time."""
        if mention.kind != "number":
            return None
        if self._derived is None or self._derived_sorted is None:
            self._derived = _derive(list(self.written))
            self._derived_sorted = sorted(self._derived)
        found = _number_in(mention, self._derived, self._derived_sorted)
        return self._derived[found] if found is not None else None


def _derive(numbers: list[Decimal]) -> dict[Decimal, str]:
    """Pairwise sums and products of `numbers`, each with how it was made (the first way)."""
    derived: dict[Decimal, str] = {}
    for i, a in enumerate(numbers):
        for b in numbers[i + 1 :]:
            derived.setdefault((a * b).normalize(), f"{a:f} × {b:f}")
            derived.setdefault((a + b).normalize(), f"{a:f} + {b:f}")
    return derived


def _number_in(
    mention: Mention, known: Collection[Decimal], ordered: list[Decimal]
) -> Decimal | None:
    """The known value that grounds a number mention (`ordered` is `known` sorted), or None."""
    (value,) = mention.values
    assert isinstance(value, Decimal)
    for multiplier in mention.multipliers:
        scaled_value = (value * multiplier).normalize()
        if scaled_value in known:
            return scaled_value
    # Rounding: a source value s grounds the answer's v (written with d decimals) when
    # s / multiplier rounds to v, so s lies within half a unit of the last decimal of
    # v * multiplier. Only those candidates are tried, found by bisection.
    quantum = Decimal(1).scaleb(-mention.decimals)
    for multiplier in mention.multipliers:
        low = (value - quantum / 2) * multiplier
        high = (value + quantum / 2) * multiplier
        start = bisect.bisect_left(ordered, low)
        for source in ordered[start : bisect.bisect_right(ordered, high)]:
            scaled = source / multiplier
            for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN):
                try:
                    if scaled.quantize(quantum, rounding=rounding) == value:
                        return source
                except InvalidOperation:
                    continue
    return None


def _date_matches(stated: DateValue, known: set[DateValue]) -> bool:
    """Same month; the same day unless the answer names none; the same year unless one
    side names none."""
    year, month, day = stated
    for k_year, k_month, k_day in known:
        if k_month != month:
            continue
        if day is not None and k_day != day:
            continue
        if year is not None and k_year is not None and k_year != year:
            continue
        return True
    return False


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def _multipliers(scale: str | None) -> tuple[Decimal, ...]:
    if not scale:
        return ()
    word = re.sub(r"\s+", "", scale).lower()
    return _MULTIPLIERS.get(word, ())


def _year(text: str | None) -> int | None:
    if not text:
        return None
    year = int(text)
    return year + 2000 if len(text) == 2 else year


def _valid(month: int, day: int | None) -> bool:
    return 1 <= month <= 12 and (day is None or 1 <= day <= 31)


def _date_mention(text: str, candidates: Iterable[DateValue]) -> Mention | None:
    values = frozenset(c for c in candidates if _valid(c[1], c[2]))
    return Mention(text=text, kind="date", values=values) if values else None


Spanned = tuple[int, int, Mention]


class _Taken:
    """Which characters of a text a match already claimed (linear in the text's length)."""

    def __init__(self, text: str) -> None:
        self._mask = bytearray(len(text))

    def free(self, start: int, end: int) -> bool:
        return self._mask.find(1, start, end) == -1

    def take(self, start: int, end: int) -> None:
        self._mask[start:end] = b"\x01" * (end - start)


def _dates(text: str) -> list[Spanned]:
    """Dates with their spans resolved left to right, the most specific pattern first."""
    found: list[Spanned] = []
    taken = _Taken(text)

    def add(match: re.Match[str], candidates: Iterable[DateValue]) -> None:
        if not taken.free(match.start(), match.end()):
            return
        mention = _date_mention(match.group(0).strip(), candidates)
        if mention is not None:
            taken.take(match.start(), match.end())
            found.append((match.start(), match.end(), mention))

    for m in _ISO_DATE.finditer(text):
        add(m, [(int(m["y"]), int(m["m"]), int(m["d"]))])
    for m in _NUMERIC_DATE.finditer(text):
        a, b, year = int(m["a"]), int(m["b"]), _year(m["y"])
        add(m, [(year, a, b), (year, b, a)])
    for pattern in (_MONTH_DAY, _DAY_MONTH):
        for m in pattern.finditer(text):
            month = _MONTHS[m["mon"][:3].lower()]
            add(m, [(_year(m["y"]), month, int(m["d"]))])
    for m in _MONTH_YEAR.finditer(text):
        add(m, [(_year(m["y"]), _MONTHS[m["mon"][:3].lower()], None)])
    return found


def _hours(hour: int, ampm: str | None) -> set[int]:
    if ampm:
        base = hour % 12
        return {base + 12} if ampm.lower() == "p" else {base}
    return {hour} if hour == 0 or hour >= 12 else {hour, hour + 12}


def _times(text: str) -> list[Spanned]:
    found: list[Spanned] = []
    taken = _Taken(text)
    for pattern in (_CLOCK, _HOUR_AMPM, _OCLOCK):
        for m in pattern.finditer(text):
            groups = m.groupdict()
            hour = int(m["h"])
            minute = int(groups.get("m") or 0)
            if hour > 23 or minute > 59 or not taken.free(m.start(), m.end()):
                continue
            taken.take(m.start(), m.end())
            values = frozenset((h, minute) for h in _hours(hour, groups.get("ap")))
            found.append((m.start(), m.end(), Mention(m.group(0).strip(), "time", values)))
    return found


def _number_mention(answer: str, match: re.Match[str]) -> Mention | None:
    """The number a match states, or None when it is a count (see the module docstring)."""
    raw = match.group("num")
    value = _decimal(raw)
    if value is None:
        return None
    scale = _multipliers(match.group("scale"))
    currency = _CURRENCY_BEFORE.search(answer[max(0, match.start() - 4) : match.start()])
    unit = None if scale else _UNIT_AFTER.match(answer, match.end())
    ordinal = _ORDINAL_AFTER.match(answer, match.end()) if not scale else None
    whole = "." not in raw and "," not in raw
    if ordinal and whole and (value <= _MAX_COUNT or ordinal.group("century")):
        return None  # "1st", "3rd place", "21st century"
    if whole and value <= _MAX_COUNT and not (scale or currency or unit or ordinal):
        return None  # "top 3", "2 options", "step 1"
    text = match.group(0).strip()
    if currency:
        text = currency.group(0) + text
    if unit:
        text += unit.group(0)
    elif ordinal:
        text += ordinal.group(0)
    return Mention(
        text=text,
        kind="number",
        values=frozenset({value}),
        decimals=len(raw.split(".", 1)[1]) if "." in raw else 0,
        multipliers=(Decimal(1), *scale),
    )


def mentions(answer: str) -> list[Mention]:
    """The distinct numbers, dates and times an answer states, in order of appearance."""
    taken = _Taken(answer)
    for pattern in (_URL, _CITATION, _LIST_MARKER, _IDIOM, _HTTP_STATUS):
        for m in pattern.finditer(answer):
            taken.take(*m.span())

    stated: list[tuple[int, Mention]] = []
    for start, end, mention in _dates(answer) + _times(answer):  # dates win over times
        if not taken.free(start, end):
            continue
        taken.take(start, end)
        stated.append((start, mention))
    for match in _ANSWER_NUMBER.finditer(answer):
        start, end = match.span("num")
        if not taken.free(start, end):
            continue
        number = _number_mention(answer, match)
        if number is not None:
            stated.append((start, number))
    stated.sort(key=lambda item: item[0])
    seen: set[tuple[str, frozenset[object]]] = set()
    distinct: list[Mention] = []
    for _, mention in stated:
        if mention.key not in seen:
            seen.add(mention.key)
            distinct.append(mention)
    return distinct
