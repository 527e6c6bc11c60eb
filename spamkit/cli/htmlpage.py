"""The page every HTML report is: its style, the line saying what was evaluated, the numbers
in spans that name them, and plots embedded as PNG with alt text.

Takes what a report shows (a drawing function for each plot, the values and where they sit in
the result dict) and gives HTML; the reports themselves are :mod:`spamkit.cli.htmlreport`.
Plots use matplotlib's headless Agg backend, imported on the first plot.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re


#: displayed size of a plot, in CSS pixels; it is drawn at twice that (sharp on high-density screens and zoomed)
PLOT_SIZE = (520, 380)


_SPAM_WORD = re.compile(r"\bspam\b")
_HAM_WORD = re.compile(r"\bham\b")


def class_words(positive: str = "spam", negative: str = "ham"):
    """A function that says "spam" and "ham" as the two classes of an evaluation are called.

    >>> class_words("email", "sms")("ham called spam; P(spam)")
    'sms called email; P(email)'
    """
    if (positive, negative) == ("spam", "ham"):
        return lambda text: text
    return lambda text: _HAM_WORD.sub(lambda m: negative, _SPAM_WORD.sub(lambda m: "\0SPAM\0", text)).replace(
        "\0SPAM\0", positive)


def figure(draw, say=None) -> str:
    """A plot as ``<figure>`` with a PNG at 2x resolution and alt text from its title and axes.

    ``say`` rewrites the words of titles, axes and legends (the class names of a two-class
    evaluation whose classes are not spam and ham: :func:`class_words`)."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    width, height = PLOT_SIZE
    fig, ax = plt.subplots(figsize=(width / 100, height / 100), dpi=200)
    try:
        draw(ax)
        if say is not None:
            ax.set(title=say(ax.get_title()), xlabel=say(ax.get_xlabel()), ylabel=say(ax.get_ylabel()))
            legend = ax.get_legend()
            for text in legend.get_texts() if legend is not None else ():
                text.set_text(say(text.get_text()))
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        alt = f"{ax.get_title()}: {ax.get_ylabel()} against {ax.get_xlabel()}"
        legend = ax.get_legend()
        if legend is not None:
            alt += "; one curve each for " + ", ".join(t.get_text() for t in legend.get_texts())
    finally:
        plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (f'<figure><img alt="{html.escape(alt)}" width="{width}" height="{height}" '
            f'src="data:image/png;base64,{data}"></figure>')


STYLE = ("<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
          "table{border-collapse:collapse;margin:1em 0;max-width:100%}"
          "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;overflow-wrap:anywhere}"
          "figure{display:inline-block;margin:.5em;max-width:100%}img{max-width:100%;height:auto}"
          "code,pre{background:#f4f4f4;padding:.2em;white-space:pre-wrap;overflow-wrap:anywhere}"
          "p.what{background:#eef3f8;padding:.5em;overflow-wrap:anywhere}details{margin:1em 0}"
          "summary{cursor:pointer;font-weight:bold}</style>")


def page(title: str, what: str, body: str, folded: list[tuple[str, str]]) -> str:
    """The page around a report: ``what`` (what was evaluated, one line) on top, ``folded``
    ((summary, text) pairs: the command, the filter's manifest) closed at the bottom."""
    details = "".join(f"<details><summary>{html.escape(name)}</summary><pre>{html.escape(text)}</pre></details>"
                      for name, text in folded)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>{STYLE}</head><body>
<h1>{html.escape(title)}</h1>
<p class="what">{what}</p>
{body}
<h2>Configuration</h2>{details}
</body></html>
"""


def what_line(command: str, configuration: dict | None = None, corpora=None) -> str:
    """One line: the filter, the corpora, the date, the filter's configuration."""
    import datetime as dt
    parts = []
    configuration = configuration or {}
    manifest = configuration.get("manifest") or {}
    if configuration.get("model"):
        model = manifest.get("model", {})
        kind = model.get("type", "")
        classes = ", ".join(map(str, model.get("classes", [])))
        parts.append(f"filter <code>{html.escape(str(configuration['model']))}</code>"
                     + (f" ({html.escape(kind)}; classes {html.escape(classes)})" if kind else ""))
    if corpora:
        parts.append("corpora " + ", ".join(
            f"<code>{html.escape(str(c.get('path', c)))}</code>" + (
                f" ({', '.join(f'{html.escape(str(k))} {v}' for k, v in c['per_class'].items())})"
                if isinstance(c, dict) and c.get("per_class") else "") for c in corpora))
    parts.append(dt.datetime.now().strftime("%Y-%m-%d %H:%M"))
    parts.append(f"command <code>{html.escape(command)}</code>")
    return "Evaluated: " + "; ".join(parts) + "."


def value_span(key: str, value, fmt: str = "{:.4f}") -> str:
    """A number of the report in a span that names it (``data-key``) and holds it exactly
    (``data-value``, JSON: null where the measure is undefined on these messages, shown n/a)."""
    if isinstance(value, float) and value != value:
        value = None
    text = (fmt.format(value) if isinstance(value, (int, float)) else "n/a" if value is None
            else html.escape(str(value)))
    return f'<span data-key="{html.escape(key)}" data-value="{html.escape(json.dumps(value))}">{text}</span>'
