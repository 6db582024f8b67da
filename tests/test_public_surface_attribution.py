"""The public names attribution, the benchmark and calibration added (issue #23), pinned
like those of `test_public_surface.py`: a name leaves only with a CHANGELOG entry."""

from __future__ import annotations

import importlib

import pytest

PUBLIC_NAMES: dict[str, list[str]] = {
    "tracejudge.models": [
        "Attribution",
        "Cause",
        "AttributionMethod",
        "ATTRIBUTION_METHODS",
        "Estimate",
        "BenchItemResult",
        "BenchRow",
        "BenchReport",
        "HumanLabel",
        "LabelVerdict",
        "AgreementBand",
        "CalibrationItem",
        "CalibrationReport",
        "Confusion",
        "CriterionAgreement",
        "LabelStats",
        "Repeatability",
    ],
    "tracejudge.judges": ["StructuredRequest", "reply_of"],
    "tracejudge.evaluation.attribution": [
        "AttributionRequest",
        "from_answers",
        "trace_steps",
        "render_steps",
        "JUDGE_METHODS",
    ],
    "tracejudge.bench": ["BenchItem", "read_items", "run_bench", "history_trace", "score_item"],
    "tracejudge.calibration": [
        "calibrate",
        "acalibrate",
        "read_labels",
        "write_labels",
        "cohen_kappa",
        "krippendorff_alpha",
        "confusion_matrix",
        "precision_recall",
        "band_of",
    ],
    "tracejudge.report": [
        "format_attribution",
        "format_bench",
        "render_bench_html",
        "format_calibration",
        # experiments (issue #34)
        "format_comparison",
        "render_comparison_html",
        "comparison_policy",
    ],
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC_NAMES))
def test_module_keeps_its_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in PUBLIC_NAMES[module_name] if name not in module.__all__]
    assert not missing, f"{module_name}.__all__ lost {missing}"
    for name in module.__all__:
        assert getattr(module, name, None) is not None, f"{module_name}.{name} does not resolve"


def test_the_clients_attribute() -> None:
    from tracejudge import AsyncComposo, Composo

    assert callable(Composo.attribute) and callable(AsyncComposo.attribute)
