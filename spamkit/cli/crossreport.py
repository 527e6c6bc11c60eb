"""The text of the cross-validated commands: ``tune`` (k-NN's k and weighting), ``threshold``
(the cost curve and the recommended cut) and ``compare`` (configurations side by side on the
same folds, two classes or more).

Takes the result dicts of :mod:`spamkit.decide.selection` and :mod:`spamkit.jobs.crossval` and
gives lines for a person; computes nothing (the other commands' text is
:mod:`spamkit.cli.report`).
"""

from __future__ import annotations

from .report import number, percent


def render_tuning(result) -> str:
    """kNN cross-validation: error rate per k and weighting, the best marked."""
    head = f"  {'k':>4} " + " ".join(f"{w:>16}" for w in result.weights)
    lines = [f"kNN tuning: {result.folds}-fold stratified cross-validation (seed {result.seed}); error rate",
             head]
    for col, k in enumerate(result.ks):
        cells = []
        for w in result.weights:
            mark = "*" if (k, w) == (result.best_k, result.best_weights) else " "
            cells.append(f"{100 * result.errors[w][col]:7.2f}% ±{100 * result.stds[w][col]:5.2f}{mark}")
        lines.append(f"  {k:>4} " + " ".join(f"{c:>16}" for c in cells))
    lines.append(f"best: k={result.best_k}, weights={result.best_weights} "
                 f"(error {100 * result.best_error:.2f}%)")
    return "\n".join(lines)


def render_threshold(r: dict, saved_in: str | None = None) -> str:
    """The threshold choice: a cost curve and the recommendation (``saved_in``: the filter file
    ``--save`` wrote it to)."""
    lines = [f"threshold choice: {r['folds']}-fold cross-validation on {r['n']} messages "
             f"(ham {r['n_ham']}, spam {r['n_spam']}); a false positive costs {r['c_fp']:g}, "
             f"a missed spam {r['c_fn']:g}",
             f"  {'P(spam) >':>12} {'log-odds':>9} {'cost/msg':>10}"]
    chosen, bayes = r["chosen"]["log_odds"], r["bayes"]["log_odds"]
    for point in r["curve"][::2] if len(r["curve"]) > 30 else r["curve"]:
        mark = "  <- chosen" if point["log_odds"] == chosen else ("  <- Bayes t*" if point["log_odds"] == bayes else "")
        lines.append(f"  {point['p_spam']:>12.6g} {point['log_odds']:>9.2f} {point['cost']:>10.4f}{mark}")
    lines.append(f"Bayes threshold t* = {r['bayes']['p_spam']:.4g}: {r['bayes']['cost']:.4f} per message")
    lines.append(f"at P(spam) = 0.5: {r['at_one_half']['cost']:.4f} per message")
    c = r["chosen"]
    lines.append(f"recommended: spam above P(spam) = {c['p_spam']:.6g} (log-odds {c['log_odds']:.3f}): "
                 f"{c['cost']:.4f} per message, {c['false_positives']} false positives and "
                 f"{c['false_negatives']} missed spam in cross-validation")
    if saved_in is not None:
        lines.append(f"threshold saved in {saved_in}: classify and filter call spam above P(spam) "
                     f"{c['p_spam']:.6g}")
    return "\n".join(lines)


def render_comparison(r: dict) -> str:
    """Configurations side by side, cross-validated on the same folds."""
    if r["configs"] and "auc" not in r["configs"][0]:
        return render_k_class_comparison(r)
    lines = [f"{r['folds']}-fold stratified cross-validation (seed {r['seed']}), the same folds for every "
             "configuration; pooled out-of-fold scores, threshold P(spam) = 0.5",
             f"  {'configuration':<34} {'AUC':>7} {'95% interval':>17} {'(1-ROCA)%':>10} {'accuracy':>9} "
             f"{'spam rec':>9} {'ham rec':>8} {'lam%':>6}  {'AUC per fold':>16}"]
    for c in r["configs"]:
        lines.append(f"  {c['name'][:34]:<34} {c['auc']:>7.4f}  [{c['auc_low']:.4f}, {c['auc_high']:.4f}] "
                     f"{c['roca_pct']:>10.3f} {100 * c['accuracy']:>8.2f}% {100 * c['spam_recall']:>8.2f}% "
                     f"{100 * c['ham_recall']:>7.2f}% {c['lam_pct']:>6.2f}  {c['auc_fold_mean']:.4f} ±{c['auc_fold_std']:.4f}")
    lines += vs_first_lines(r, "AUC", lambda v: f"{v['auc_diff_mean']:+.4f} ±{v['auc_diff_std']:.4f}")
    return "\n".join(lines + comparison_cost_lines(r))


def vs_first_lines(r: dict, measure: str, difference) -> list[str]:
    """Each configuration after the first against the first: ``difference(vs_first)`` of the
    ``measure`` per fold, and in how many folds it was better and worse."""
    first = r["configs"][0]["name"]
    return [f"  {c['name']} vs {first}: {measure} per fold {difference(c['vs_first'])}, better in "
            f"{c['vs_first']['folds_better']} of {r['folds']} folds, worse in {c['vs_first']['folds_worse']}"
            for c in r["configs"][1:]]


def comparison_cost_lines(r: dict) -> list[str]:
    """The ``--cost`` results of ``cv`` / ``compare``: realised and expected cost per message, decisions."""
    lines: list[str] = []
    for c in r["configs"]:
        costs = c.get("costs")
        if costs is None:
            continue
        if not lines:
            m = costs["matrix"]
            lines.append("  decided by the costs " + ", ".join(
                f"{d}|{cls}={v:g}" for d, row in zip(m["decisions"], m["costs"]) for cls, v in zip(m["classes"], row) if v))
        lines.append(f"  {c['name'][:34]:<34} cost per message {costs['cost_per_message']:.4f} (expected "
                     f"{costs['expected_cost_per_message']:.4f}); " + "; ".join(
                         f"true {cls}: " + " ".join(f"{d} {n}" for d, n in row.items())
                         for cls, row in costs["decisions"].items()))
    return lines


def render_k_class_comparison(r: dict) -> str:
    first = r["configs"][0]
    lines = [f"{r['folds']}-fold stratified cross-validation (seed {r['seed']}), the same folds for every "
             f"configuration; {first['n']} messages of {len(first['classes'])} classes "
             f"({', '.join(first['classes'])}); decisions: the most probable class",
             f"  {'configuration':<34} {'accuracy':>9} {'macro F1':>9} {'log loss':>9} {'macro AUC':>10} "
             f"{'micro AUC':>10} {'macro AP':>9}  {'accuracy per fold':>18}"]
    for c in r["configs"]:
        o = c["one_vs_rest"]
        lines.append(f"  {c['name'][:34]:<34} {percent(c['accuracy']):>9} {percent(c['macro_f1']):>9} {c['log_loss']:>9.4f} "
                     f"{number(o['macro']['auc']):>10} {number(o['micro']['auc']):>10} "
                     f"{number(o['macro']['average_precision']):>9}  "
                     f"{100 * c['accuracy_fold_mean']:.2f}% ±{100 * c['accuracy_fold_std']:.2f}")
    lines += vs_first_lines(r, "accuracy", lambda v: f"{100 * v['accuracy_diff_mean']:+.2f} "
                                                      f"±{100 * v['accuracy_diff_std']:.2f} points")
    return "\n".join(lines + comparison_cost_lines(r))
