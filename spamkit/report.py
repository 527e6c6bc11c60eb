"""Rendering results as text or JSON for people and programs; computes nothing."""

from __future__ import annotations

import json


def human_bytes(n: float) -> str:
    """``1536`` -> ``'1.5 KB'`` (powers of 1024).

    >>> human_bytes(0), human_bytes(1536), human_bytes(3 * 1024 ** 2)
    ('0 B', '1.5 KB', '3.0 MB')
    """
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def render_survey(survey) -> str:
    """A :class:`spamkit.pipeline.CorpusSurvey` as a few aligned lines."""
    classes = ", ".join(f"{'(unlabelled)' if k == 'None' else k} {v}" for k, v in survey.per_class.items())
    avg = survey.n_bytes / survey.n_messages if survey.n_messages else 0
    lines = [
        f"{survey.path}",
        f"  format     {survey.format} ({survey.container})",
        f"  messages   {survey.n_messages}  ({classes})",
        f"  size       {human_bytes(survey.n_bytes)}  (mean {human_bytes(avg)} per message)",
    ]
    if survey.first_date:
        lines.append(f"  dates      {survey.first_date} .. {survey.last_date}")
    if survey.parsed:
        share = 100.0 * survey.n_with_fallback / survey.n_messages if survey.n_messages else 0.0
        kinds = ", ".join(f"{k} {v}" for k, v in survey.kinds.items())
        lines.append(f"  parsed     {survey.n_messages}  ({kinds}); "
                     f"{survey.n_with_fallback} needed a fallback ({share:.1f}%)")
        if survey.defects:
            lines.append("  fallbacks  " + ", ".join(f"{k} {v}" for k, v in survey.defects.items()))
    skipped = ", ".join(f"{k}: {v}" for k, v in survey.skipped.items())
    lines.append(f"  skipped    {sum(survey.skipped.values())}" + (f"  ({skipped})" if skipped else ""))
    rate = survey.n_messages / survey.seconds if survey.seconds else 0.0
    lines.append(f"  read in    {survey.seconds:.2f} s  ({rate:.0f} messages/s, "
                 f"{survey.n_bytes / 1e6 / survey.seconds if survey.seconds else 0:.1f} MB/s)")
    return "\n".join(lines)


def to_json(obj) -> str:
    """Stable, sorted JSON."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
