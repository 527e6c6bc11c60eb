"""One self-contained HTML evaluation report: plots embedded as PNG, numbers from the JSON result.

Made for a person reading it in a browser: what was evaluated (filter, corpora, date,
configuration) in one line at the top, the filter's manifest folded away, plots drawn at
twice their displayed resolution (sharp when zoomed) with alt text that says what each shows,
a viewport for small screens, and nothing wider than the window (long tokens and paths wrap).
``tests/test_htmlreport.py`` renders the pages in headless Chromium and checks them.

Renders, computes nothing: every number shown comes from the evaluation result dict
(:func:`spamkit.jobs.evaluate.evaluate_filter` with ``detail=True``), which ``--json`` prints
as well, and each is written into an element with a ``data-key`` attribute naming its
place in that dict, so a test can check that the page and the JSON agree. Plots use
matplotlib's headless Agg backend (no display needed): ROC on a linear and a logarithmic
false-positive axis (filters live below 1% FPR), precision-recall, the reliability diagram,
the realised cost per message against the threshold, and log-odds histograms per class.
"""

from __future__ import annotations

import html
import json

from .htmlpage import class_words, figure, page, value_span, what_line


def _plots(report: dict, say=None) -> dict:
    roc, pr, rel, hist, thr = report["roc"], report["pr"], report["reliability"], report["histogram"], report["threshold"]

    def roc_linear(ax):
        ax.plot(roc["fpr"], roc["tpr"], color="C0")
        ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
        ax.set(xlabel="false-positive rate (ham called spam)", ylabel="true-positive rate (spam caught)",
               title=f"ROC, AUC {report['auc']['auc']:.4f}")

    def roc_log(ax):
        # from the smallest rate these messages can show (one ham in all of them), not below it
        floor = roc.get("smallest_fpr", 1e-5)
        fpr = [max(x, floor) for x in roc["fpr"]]
        ax.step(fpr, roc["tpr"], where="post", color="C0")
        ax.set_xscale("log")
        ax.set(xlim=(floor, 1), xlabel=f"false-positive rate (log scale, from 1 ham in {round(1 / floor):,})",
               ylabel="true-positive rate", title="ROC at low false-positive rates")

    def precision_recall(ax):
        ax.plot(pr["recall"], pr["precision"], color="C2")
        ax.set(xlabel="recall (spam caught)", ylabel="precision", ylim=(0, 1.02),
               title=f"precision-recall, AP {report['average_precision']:.4f}")

    def reliability(ax):
        ax.plot([0, 1], [0, 1], color="0.7", lw=0.8, ls="--")
        raw = report["calibration"].get("raw")
        for bins, label, color in ((rel, "filter", "C3"), (raw["reliability"] if raw else None, "before calibration",
                                                              "0.5")):
            if bins is None:
                continue
            pts = [(b["mean_predicted"], b["observed"]) for b in bins if b["n"]]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color, label=label)
        ax.legend()
        ax.set(xlabel="predicted P(spam)", ylabel="observed spam rate", xlim=(0, 1), ylim=(0, 1),
               title="reliability (calibration)")

    def cost_curve(ax):
        xs = [c["log_odds"] for c in thr["curve"]]
        ax.plot(xs, [c["cost"] for c in thr["curve"]], color="C4")
        ax.axvline(thr["chosen"]["log_odds"], color="C1", ls="--", label="chosen")
        if abs(thr["bayes"]["log_odds"]) < 50:
            ax.axvline(thr["bayes"]["log_odds"], color="0.5", ls=":", label="Bayes t*")
        ax.legend()
        ax.set(xlabel="threshold (log-odds of spam)", ylabel="cost per message",
               title=f"cost against threshold (fp {thr['c_fp']:g}, fn {thr['c_fn']:g})")

    def histograms(ax):
        lo, hi = hist["range"]
        n = len(hist["ham"])
        edges = [lo + (hi - lo) * i / n for i in range(n)]
        width = (hi - lo) / n
        ax.bar(edges, hist["ham"], width=width, align="edge", alpha=0.6, label="ham", color="C0")
        ax.bar(edges, hist["spam"], width=width, align="edge", alpha=0.6, label="spam", color="C3")
        ax.set_yscale("symlog")
        ax.legend()
        ax.set(xlabel="log-odds of spam", ylabel="messages", title="scores per class")

    return {"roc": figure(roc_linear, say), "roc_log": figure(roc_log, say), "pr": figure(precision_recall, say),
            "reliability": figure(reliability, say), "cost": figure(cost_curve, say),
            "histogram": figure(histograms, say)}


def render_k_class_html(result: dict, command: str, configuration: dict) -> str:
    """The report page of a filter with any number of classes: per-class measures, one-vs-rest
    ROC and precision-recall curves (each class and the micro average), the confusion matrix."""
    labels, ovr, curves = result["labels"], result["one_vs_rest"], result["report"]

    def overlay(ax, kind):
        for i, label in enumerate(labels):
            if label in curves["per_class"]:
                c = curves["per_class"][label][kind]
                x, y = (c["fpr"], c["tpr"]) if kind == "roc" else (c["recall"], c["precision"])
                measure = ovr["per_class"][label]["auc" if kind == "roc" else "average_precision"]
                ax.step(x, y, where="post", color=f"C{i}", label=f"{label[:20]} ({measure:.4f})")
        c = curves["micro"][kind]
        x, y = (c["fpr"], c["tpr"]) if kind == "roc" else (c["recall"], c["precision"])
        ax.step(x, y, where="post", color="k", linestyle="--",
                label=f"micro average ({ovr['micro']['auc' if kind == 'roc' else 'average_precision']:.4f})")
        ax.legend(fontsize=7)
        ax.set(xlabel="false-positive rate" if kind == "roc" else "recall",
               ylabel="true-positive rate" if kind == "roc" else "precision",
               title="ROC, each class against the rest" if kind == "roc" else "precision-recall, each class against the rest")

    plots = [figure(lambda ax: overlay(ax, "roc")), figure(lambda ax: overlay(ax, "pr"))]
    head = "<tr><th>class</th><th>precision</th><th>recall</th><th>F1</th><th>support</th><th>ROC AUC</th><th>average precision</th></tr>"
    rows = []
    for label in labels:
        s, o = result["per_class"][label], ovr["per_class"][label]
        k, ok = f"per_class.{label}.", f"one_vs_rest.per_class.{label}."
        rows.append(f"<tr><th>{html.escape(label)}</th><td>{value_span(k + 'precision', s['precision'])}</td>"
                    f"<td>{value_span(k + 'recall', s['recall'])}</td><td>{value_span(k + 'f1', s['f1'])}</td>"
                    f"<td>{value_span(k + 'support', s['support'], '{}')}</td><td>{value_span(ok + 'auc', o['auc'])}</td>"
                    f"<td>{value_span(ok + 'average_precision', o['average_precision'])}</td></tr>")
    averages = "".join(f"<tr><th>{kind}</th><td>{value_span(f'one_vs_rest.{kind}.auc', ovr[kind]['auc'])}</td>"
                       f"<td>{value_span(f'one_vs_rest.{kind}.average_precision', ovr[kind]['average_precision'])}</td></tr>"
                       for kind in ("macro", "weighted", "micro"))
    confusion = ("<table><tr><th>true \\ decided</th>" + "".join(f"<th>{html.escape(label)}</th>" for label in labels) + "</tr>"
                 + "".join(f"<tr><th>{html.escape(label)}</th>" + "".join(
                     f"<td>{value_span(f'confusion.{i}.{j}', n, '{}')}</td>" for j, n in enumerate(row)) + "</tr>"
                     for i, (label, row) in enumerate(zip(labels, result["confusion"]))) + "</table>")
    body = f"""<p>{value_span("n", result["n"], "{}")} messages; accuracy {value_span("accuracy", result["accuracy"])}, macro F1
{value_span("macro_f1", result["macro_f1"])}.</p>
<h2>Each class</h2><table>{head}{''.join(rows)}</table>
<h2>Averages of the one-vs-rest measures</h2>
<table><tr><th></th><th>ROC AUC</th><th>average precision</th></tr>{averages}</table>
<h2>Confusion matrix</h2>{confusion}
<h2>Curves</h2>{''.join(plots)}"""
    return page(f"spamkit evaluation: {len(labels)} classes", what_line(command, configuration, result.get("corpora")),
                 body, [("command", command), ("the filter's manifest and settings",
                                               json.dumps(configuration, indent=2, sort_keys=True, default=str))])


def _overlaid_rocs(curves: list, title: str) -> list:
    """Two figures (linear and log false-positive rate) of ROC curves ``(name, {"fpr", "tpr"}, auc)``
    overlaid, one colour per configuration."""
    def roc(ax, log):
        for i, (name, curve, auc) in enumerate(curves):
            fpr = [max(x, 1e-5) for x in curve["fpr"]] if log else curve["fpr"]
            ax.step(fpr, curve["tpr"], where="post", label=f"{name[:40]} ({auc:.4f})", color=f"C{i}")
        if log:
            ax.set_xscale("log")
            ax.set_xlim(1e-5, 1)
        ax.legend(fontsize=7)
        ax.set(xlabel="false-positive rate" + (" (log scale)" if log else ""), ylabel="true-positive rate",
               title=title)

    return [figure(lambda ax: roc(ax, False)), figure(lambda ax: roc(ax, True))]


def _comparison_costs(configs: list) -> str:
    """``compare --cost``: realised and expected cost per message of each configuration."""
    if not any("costs" in c for c in configs):
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(c['name'])}</td>"
        f"<td>{value_span(f'configs.{i}.costs.cost_per_message', c['costs']['cost_per_message'])}</td>"
        f"<td>{value_span(f'configs.{i}.costs.expected_cost_per_message', c['costs']['expected_cost_per_message'])}</td>"
        f"<td>{html.escape('; '.join(f'true {cls}: ' + ', '.join(f'{d} {n}' for d, n in row.items()) for cls, row in c['costs']['decisions'].items()))}</td></tr>"
        for i, c in enumerate(configs) if "costs" in c)
    return ("<h2>Decided by the costs</h2><table><tr><th>configuration</th><th>cost per message</th>"
            f"<th>expected</th><th>decisions</th></tr>{rows}</table>")


def render_k_class_comparison_html(result: dict, command: str) -> str:
    """``spamkit compare --report`` for K classes: the measures of each configuration side by side,
    paired accuracy differences per fold, and the micro-averaged one-vs-rest ROC curves overlaid."""
    configs = result["configs"]
    classes = configs[0]["classes"]

    plots = _overlaid_rocs([(c["name"], c["micro_roc"], c["one_vs_rest"]["micro"]["auc"]) for c in configs],
                           "micro-averaged one-vs-rest ROC, out-of-fold")
    head = ("<tr><th>configuration</th><th>accuracy</th><th>macro F1</th><th>log loss</th><th>macro AUC</th>"
            "<th>weighted AUC</th><th>micro AUC</th><th>macro AP</th><th>accuracy per fold (mean ± sd)</th></tr>")
    rows = []
    for i, c in enumerate(configs):
        k = f"configs.{i}."
        o = c["one_vs_rest"]
        rows.append(f"<tr><td>{html.escape(c['name'])}</td><td>{value_span(k + 'accuracy', c['accuracy'])}</td>"
                    f"<td>{value_span(k + 'macro_f1', c['macro_f1'])}</td><td>{value_span(k + 'log_loss', c['log_loss'])}</td>"
                    f"<td>{value_span(k + 'one_vs_rest.macro.auc', o['macro']['auc'])}</td>"
                    f"<td>{value_span(k + 'one_vs_rest.weighted.auc', o['weighted']['auc'])}</td>"
                    f"<td>{value_span(k + 'one_vs_rest.micro.auc', o['micro']['auc'])}</td>"
                    f"<td>{value_span(k + 'one_vs_rest.macro.average_precision', o['macro']['average_precision'])}</td>"
                    f"<td>{value_span(k + 'accuracy_fold_mean', c['accuracy_fold_mean'])} ± "
                    f"{value_span(k + 'accuracy_fold_std', c['accuracy_fold_std'])}</td></tr>")
    per_class = ("<tr><th>class</th>" + "".join(f"<th>{html.escape(c['name'][:30])}: recall / AUC</th>"
                                                 for c in configs) + "</tr>"
                 + "".join(f"<tr><th>{html.escape(label)}</th>" + "".join(
                     f"<td>{value_span(f'configs.{i}.per_class.{label}.recall', c['per_class'][label]['recall'])} / "
                     f"{value_span(f'configs.{i}.one_vs_rest.per_class.{label}.auc', c['one_vs_rest']['per_class'][label]['auc'])}</td>"
                     for i, c in enumerate(configs)) + "</tr>" for label in classes))
    paired = "".join(
        f"<li>{html.escape(c['name'])} vs {html.escape(configs[0]['name'])}: accuracy per fold "
        f"{value_span(f'configs.{i}.vs_first.accuracy_diff_mean', c['vs_first']['accuracy_diff_mean'], '{:+.4f}')}, "
        f"better in {c['vs_first']['folds_better']} of {result['folds']} folds</li>"
        for i, c in enumerate(configs) if i)
    body = f"""<p>{result['folds']}-fold stratified cross-validation (seed {result['seed']}), the same folds for every
configuration; {len(classes)} classes ({html.escape(', '.join(classes))}); decisions at the most probable class.</p>
<table>{head}{''.join(rows)}</table><ul>{paired}</ul>
<h2>Each class</h2><table>{per_class}</table>{_comparison_costs(configs)}
<h2>Curves</h2>{''.join(plots)}"""
    return page(f"spamkit comparison: {len(classes)} classes", what_line(command, None, result.get("corpora")), body,
                 [("command", command)])


def render_html(result: dict, command: str, configuration: dict) -> str:
    """The report page for an evaluation result with ``result["report"]``."""
    if "spam_recall" not in result:
        return render_k_class_html(result, command, configuration)
    say = class_words(result.get("positive", "spam"), result.get("negative", "ham"))
    r = result["report"]
    auc = r["auc"]
    plots = _plots(r, say)
    rows = [("messages", value_span("n", result["n"], "{}")),
            ("accuracy", value_span("accuracy", result["accuracy"])),
            ("spam recall", value_span("spam_recall", result["spam_recall"])),
            ("ham recall", value_span("ham_recall", result["ham_recall"])),
            ("spam precision", value_span("spam_precision", result["spam_precision"])),
            ("F1 (spam)", value_span("f1", result["f1"])),
            ("MCC", value_span("mcc", result["mcc"])),
            ("ROC AUC", value_span("report.auc.auc", auc["auc"]) + f" ({int(auc['level'] * 100)}% bootstrap interval "
             + value_span("report.auc.auc_low", auc["auc_low"]) + " – " + value_span("report.auc.auc_high", auc["auc_high"])
             + f", {auc['n_boot']} resamples)"),
            ("(1-ROCA)%", value_span("report.auc.roca_pct", auc["roca_pct"]) + " ("
             + value_span("report.auc.roca_pct_low", auc["roca_pct_low"]) + " – "
             + value_span("report.auc.roca_pct_high", auc["roca_pct_high"]) + ")"),
            *[(f"spam caught at {100 / int(rate.split('/')[1]):g}% ham misfiled (ROC read-off)",
               value_span(f"spam_caught_pct_at_hm.{rate}", value, "{:.2f}%") if value is not None
               else "not measurable (too few ham)")
              for rate, value in result.get("spam_caught_pct_at_hm", {}).items()],
            ("average precision", value_span("report.average_precision", r["average_precision"])),
            ("TREC hm% / sm% / lam%", value_span("hm_pct", result["hm_pct"], "{:.3f}") + " / "
             + value_span("sm_pct", result["sm_pct"], "{:.3f}") + " / " + value_span("lam_pct", result["lam_pct"], "{:.3f}")),
            ("Brier score / log loss of P(spam)", value_span("report.calibration.brier", r["calibration"]["brier"])
             + " / " + value_span("report.calibration.log_loss", r["calibration"]["log_loss"])
             + (" (before calibration: " + value_span("report.calibration.raw.brier", r["calibration"]["raw"]["brier"])
                + " / " + value_span("report.calibration.raw.log_loss", r["calibration"]["raw"]["log_loss"]) + ")"
                if "raw" in r["calibration"] else "")),
            ("cheapest two-way threshold (P(spam) >)", value_span("report.threshold.chosen.p_spam", r["threshold"]["chosen"]["p_spam"],
                                                      "{:.6g}") + ", cost per message "
             + value_span("report.threshold.chosen.cost", r["threshold"]["chosen"]["cost"])
             + " (chosen on these messages: descriptive, not a test result)")]
    decisions = _decisions_table(result, say)
    confusion = say(f"<table class='cm'><tr><th></th><th>called ham</th><th>called spam</th></tr>"
                    f"<tr><th>ham</th><td>{value_span('tn', result['tn'], '{}')}</td><td>{value_span('fp', result['fp'], '{}')}</td></tr>"
                    f"<tr><th>spam</th><td>{value_span('fn', result['fn'], '{}')}</td><td>{value_span('tp', result['tp'], '{}')}</td></tr>"
                    "</table>")
    mistakes = []
    for m in r["mistakes"]:
        exp = m["explanation"]
        if "neighbours" in exp:
            why = ", ".join(f"{html.escape(str(n['id']))} ({html.escape(str(n['label']))})" for n in exp["neighbours"])
        else:
            why = ", ".join(f"{html.escape(t)} {v:+.2f}" for t, v in (exp.get("towards", []) + exp.get("against", []))[:6])
        mistakes.append(f"<tr><td>{html.escape(m['id'])}</td><td>{html.escape(m['label'])}</td>"
                        f"<td>{html.escape(m.get('decision', ''))}</td><td>{m.get('cost', float('nan')):g}</td>"
                        f"<td>{m['p_spam']:.6f}</td><td>{why}</td></tr>")
    body = f"""<h2>The filter's decisions</h2>{decisions}
<h2>Measures</h2>
<table>{''.join(f'<tr><th>{say(k)}</th><td>{v}</td></tr>' for k, v in rows)}</table>
<h2>At P(spam) 0.5, without an unsure band (the ranking's view, not what the filter decided)</h2>{confusion}
<h2>Curves</h2>{''.join(plots.values())}
<h2>The ten most costly decisions</h2>
<table><tr><th>message</th><th>true class</th><th>decided</th><th>cost</th><th>{say("P(spam)")}</th>
<th>tokens that decided it (share of log-odds)</th></tr>
{''.join(mistakes) or '<tr><td colspan="6">none</td></tr>'}</table>"""
    return page("spamkit evaluation", what_line(command, configuration, result.get("corpora")), body,
                 [("command", command), ("the filter's manifest and settings",
                                         json.dumps(configuration, indent=2, sort_keys=True, default=str))])


def _decisions_table(result: dict, say) -> str:
    """What the filter decided, per true class and decision, and what it cost (the same dict as
    the terminal's and the JSON's ``costs``); without costs, its two-way decisions at P(spam) 0.5."""
    c = result.get("costs")
    if c is None:
        return ("<p>This filter has no costs: it decides the more probable class (the table at P(spam) 0.5 "
                "below is its decisions).</p>")
    classes = list(c["decisions"])
    decided = list(next(iter(c["decisions"].values())))
    head = "".join(f"<th>decided {html.escape(d)}</th>" for d in decided)
    rows = "".join(f"<tr><th>{html.escape(cls)}</th>" + "".join(
        f"<td>{value_span(f'costs.decisions.{cls}.{d}', c['decisions'][cls][d], '{}')}</td>" for d in decided) + "</tr>"
        for cls in classes)
    matrix = c["matrix"]
    priced = ", ".join(f"{d} when {cls}: {v:g}" for d, row in zip(matrix["decisions"], matrix["costs"])
                       for cls, v in zip(matrix["classes"], row) if v)
    expected = (f" (its probabilities expected {value_span('costs.expected_cost_per_message', c['expected_cost_per_message'])})"
                if "expected_cost_per_message" in c else "")
    return say(f"<table class='cm'><tr><th></th>{head}</tr>{rows}</table>"
               f"<p>cost per message {value_span('costs.cost_per_message', c['cost_per_message'])}{expected}; "
               f"costs: {html.escape(priced)}</p>")


def render_comparison_html(result: dict, command: str) -> str:
    """Configurations side by side (``spamkit compare --report``): overlaid ROC curves and the table."""
    configs = result["configs"]
    if configs and "roc" not in configs[0]:
        return render_k_class_comparison_html(result, command)

    plots = _overlaid_rocs([(c["name"], c["roc"], c["auc"]) for c in configs], "ROC, pooled out-of-fold scores")
    head = ("<tr><th>configuration</th><th>AUC</th><th>95% interval</th><th>(1-ROCA)%</th><th>accuracy</th>"
            "<th>spam recall</th><th>ham recall</th><th>lam%</th><th>AUC per fold (mean ± sd)</th></tr>")
    rows = []
    for i, c in enumerate(configs):
        k = f"configs.{i}."
        rows.append(f"<tr><td>{html.escape(c['name'])}</td><td>{value_span(k + 'auc', c['auc'])}</td>"
                    f"<td>{value_span(k + 'auc_low', c['auc_low'])} – {value_span(k + 'auc_high', c['auc_high'])}</td>"
                    f"<td>{value_span(k + 'roca_pct', c['roca_pct'], '{:.3f}')}</td>"
                    f"<td>{value_span(k + 'accuracy', c['accuracy'])}</td><td>{value_span(k + 'spam_recall', c['spam_recall'])}</td>"
                    f"<td>{value_span(k + 'ham_recall', c['ham_recall'])}</td><td>{value_span(k + 'lam_pct', c['lam_pct'], '{:.3f}')}</td>"
                    f"<td>{value_span(k + 'auc_fold_mean', c['auc_fold_mean'])} ± {value_span(k + 'auc_fold_std', c['auc_fold_std'])}</td></tr>")
    paired = "".join(
        f"<li>{html.escape(c['name'])} vs {html.escape(configs[0]['name'])}: AUC per fold "
        f"{value_span(f'configs.{i}.vs_first.auc_diff_mean', c['vs_first']['auc_diff_mean'], '{:+.4f}')}, better in "
        f"{c['vs_first']['folds_better']} of {result['folds']} folds</li>" for i, c in enumerate(configs) if i)
    body = f"""<p>{result['folds']}-fold stratified cross-validation (seed {result['seed']}), the same folds for every
configuration; pooled out-of-fold scores; recalls at P(spam) = 0.5.</p>
<table>{head}{''.join(rows)}</table><ul>{paired}</ul>{_comparison_costs(configs)}{''.join(plots)}"""
    return page("spamkit comparison", what_line(command, None, result.get("corpora")), body, [("command", command)])


def render_online_html(result: dict, command: str) -> str:
    """An online run's page (``spamkit online --report``): measures, the TREC learning curve, ROC."""
    m, st, curve = result["measures"], result["settings"], result.get("learning_curve") or []
    roc = result["report"]["roc"]

    def learning(ax):
        pts = [(p["end"], p["roca_pct"]) for p in curve if p["roca_pct"] is not None]
        above = [p for p in pts if p[1] > 0]
        zeros = [p[0] for p in pts if p[1] == 0]
        window = curve[-1]["end"] - curve[-1]["start"] if curve else 0
        ax.set(xlabel="messages classified", title=f"learning curve: the last {window} messages")
        if not above:                                  # every window perfect: nothing for a log scale
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color="C0")
            ax.set(ylabel="(1-ROCA)%")
            return
        ax.plot([p[0] for p in above], [p[1] for p in above], marker="o", color="C0", label="(1-ROCA)%")
        ax.set_yscale("log")
        ax.set(ylabel="(1-ROCA)% (log scale)")
        if zeros:                                      # 0 has no place on a log scale: marked on the axis
            bottom = min(p[1] for p in above) / 3
            ax.plot(zeros, [bottom] * len(zeros), marker="v", ls="none", color="C2",
                    label="0: every ham and spam pair ordered right")
            ax.set_ylim(bottom=bottom / 1.5)
            ax.legend()

    def roc_log(ax):
        floor = roc.get("smallest_fpr", 1e-5)       # one ham among those of the run
        ax.step([max(x, floor) for x in roc["fpr"]], roc["tpr"], where="post", color="C0")
        ax.set_xscale("log")
        ax.set(xlim=(floor, 1), xlabel=f"ham misfiled (false-positive rate, log scale, from 1 ham in {round(1 / floor):,})",
               ylabel="spam caught (true-positive rate)", title=f"ROC, (1-ROCA)% {m['roca_pct']:.4f}")

    plots = [figure(learning), figure(roc_log)]
    rows = [("messages classified / learned", value_span("n", result["n"], "{}") + " / "
             + value_span("n_learned", result["n_learned"], "{}")),
            ("(1-ROCA)%", value_span("measures.roca_pct", m["roca_pct"])),
            ("hm% / sm% / lam% (at P(spam) = 0.5)", value_span("measures.hm_pct", m["hm_pct"], "{:.3f}") + " / "
             + value_span("measures.sm_pct", m["sm_pct"], "{:.3f}") + " / " + value_span("measures.lam_pct", m["lam_pct"], "{:.3f}")),
            *[(f"spam caught at {100 / int(rate.split('/')[1]):g}% ham misfiled (ROC read-off)",
               value_span(f"measures.spam_caught_pct_at_hm.{rate}", value, "{:.2f}%") if value is not None
               else "not measurable (too few ham)")
              for rate, value in m.get("spam_caught_pct_at_hm", {}).items()]]
    d = m.get("default_decision")
    if d:
        rows.append((f"costs' cut: ham misfiled / unsure (ham below {d['low']:g}, spam above {d['high']:g})",
                     value_span("measures.default_decision.ham_misfiled", d["ham_misfiled"], "{:.3f}%") + " / "
                     + value_span("measures.default_decision.ham_unsure", d["ham_unsure"], "{:.3f}%")))
        rows.append(("costs' cut: spam caught / unsure",
                     value_span("measures.default_decision.spam_caught", d["spam_caught"], "{:.2f}%") + " / "
                     + value_span("measures.default_decision.spam_unsure", d["spam_unsure"], "{:.2f}%")))
    c = m.get("stream_cut_decision")
    if c:
        rows.append((f"default decision told every label (spamkit learn --all-mail; the spam cut chosen on the stream "
                     f"so far, {c['high_range'][0]:g} to {c['high_range'][1]:g}): ham misfiled / unsure",
                     value_span("measures.stream_cut_decision.ham_misfiled", c["ham_misfiled"], "{:.3f}%") + " / "
                     + value_span("measures.stream_cut_decision.ham_unsure", c["ham_unsure"], "{:.3f}%")))
        rows.append(("default decision told every label: spam caught / unsure",
                     value_span("measures.stream_cut_decision.spam_caught", c["spam_caught"], "{:.2f}%") + " / "
                     + value_span("measures.stream_cut_decision.spam_unsure", c["spam_unsure"], "{:.2f}%")))
    if "active" in st:
        rows.append(("labels asked for (active learning)", value_span("settings.asked", st["asked"], "{}")
                     + f" of at most {st['active']}"))
    points = "".join(f"<tr><td>{p['start']}–{p['end']}</td><td>{p['ham']}</td><td>{p['spam']}</td><td>"
                     + (value_span(f"learning_curve.{i}.roca_pct", p["roca_pct"]) if p["roca_pct"] is not None else "n/a")
                     + "</td></tr>" for i, p in enumerate(curve))
    body = f"""<p>The TREC spam-track protocol: each message classified in order, then learned.</p>
<table>{''.join(f'<tr><th>{k}</th><td>{v}</td></tr>' for k, v in rows)}</table>
<h2>Curves</h2>{''.join(plots)}
<h2>Learning curve</h2>
<table><tr><th>messages</th><th>ham</th><th>spam</th><th>(1-ROCA)%</th></tr>{points}</table>"""
    return page("spamkit online evaluation", what_line(command, None, result.get("corpora")), body,
                 [("command", command), ("settings", json.dumps(st, indent=2, sort_keys=True, default=str))])
