"""A judge's calibration against people's labels, as text (`tracejudge calibrate`)."""

from __future__ import annotations

from tracejudge.models import CalibrationReport, Estimate

__all__ = ["format_calibration"]


def _number(estimate: Estimate | None) -> str:
    return "n/a" if estimate is None else str(estimate)


def format_calibration(report: CalibrationReport) -> str:
    """Agreement with intervals, the band and what it supports, the confusion matrix,
    precision and recall per label, graded agreement, repeatability, notes."""
    lines = [
        f"judge {report.judge or 'none'} against {report.items} labels"
        + (f" ({report.skipped} left out)" if report.skipped else ""),
        f"  agreement        {_number(report.agreement)}",
        f"  Cohen's kappa    {_number(report.kappa)}",
        f"  Krippendorff's a {_number(report.alpha)}  (nominal)",
    ]
    if report.graded_items:
        lines.append(f"  graded labels    {report.graded_items}")
        lines.append(f"  Spearman         {_number(report.spearman)}")
        lines.append(f"  Krippendorff's a {_number(report.alpha_interval)}  (interval, scores)")
    if report.human_alpha is not None:
        lines.append(f"  people agree     {_number(report.human_alpha)}  (alpha among labellers)")
    lines.append(f"  band: {report.band_text}")
    (pp, pf), (fp, ff) = report.confusion.matrix
    lines += [
        "",
        "                 judge pass  judge fail",
        f"  people pass    {pp:>10}  {pf:>10}",
        f"  people fail    {fp:>10}  {ff:>10}",
        "",
        "  label  precision  recall  f1     support",
    ]
    for stats in report.per_label:
        lines.append(
            f"  {stats.label:<5}  {stats.precision:>9.3f}  {stats.recall:>6.3f}  {stats.f1:.3f}"
            f"  {stats.support:>7}"
        )
    if len(report.by_criterion) > 1:
        lines.append("")
        for row in report.by_criterion:
            kappa = "n/a" if row.kappa is None else f"{row.kappa:.3f}"
            agreement = "n/a" if row.agreement is None else f"{row.agreement:.3f}"
            lines.append(
                f"  {row.items:>4} items  agreement {agreement}  kappa {kappa}  {row.criterion}"
            )
    if report.repeatability is not None:
        r = report.repeatability
        lines.append("")
        lines.append(
            f"  judged {r.samples} times each ({r.items} items): flip rate "
            + ("n/a" if r.flip_rate is None else f"{r.flip_rate:.3f}")
            + ", mean score variance "
            + ("n/a" if r.mean_variance is None else f"{r.mean_variance:.4f}")
            + f", pass^{r.samples} "
            + ("n/a" if r.pass_k is None else f"{r.pass_k:.3f}")
        )
    if report.usage.calls:
        cost = report.usage.cost_usd
        lines.append(
            f"  judge: {report.usage.calls} calls, {report.usage.input_tokens} input and "
            f"{report.usage.output_tokens} output tokens"
            + (f", ${cost:.4f}" if cost is not None else "")
        )
    lines.extend(f"  note: {note}" for note in report.notes)
    lines.append(f"  (95% bootstrap intervals, {report.resamples} resamples, seed {report.seed})")
    return "\n".join(lines)
