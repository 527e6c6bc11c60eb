"""Rendering results as text or JSON for people and programs; computes nothing."""

from __future__ import annotations

import json
from functools import partial

from ..decide.familiar import guard_settings
from ..common.errors import counted
from ..common.names import FISHER_MODEL, STACK_MODEL


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
    """A :class:`spamkit.jobs.survey.CorpusSurvey` as a few aligned lines."""
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
    lines.extend(f"    {why}" for why in survey.unreadable[:20])
    rate = survey.n_messages / survey.seconds if survey.seconds else 0.0
    lines.append(f"  read in    {survey.seconds:.2f} s  ({rate:.0f} messages/s, "
                 f"{survey.n_bytes / 1e6 / survey.seconds if survey.seconds else 0:.1f} MB/s)")
    return "\n".join(lines)


def json_safe(obj):
    """``obj`` with every float that JSON cannot hold (NaN, infinities: a measure undefined on
    these messages, e.g. the AUC of one class) as None, so that the output is JSON that any
    parser reads (``json.dumps`` would write the bare word ``NaN``).

    >>> json_safe({"auc": float("nan"), "n": [1.5, float("inf")]})
    {'auc': None, 'n': [1.5, None]}
    """
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def to_json(obj) -> str:
    """Stable, sorted JSON (a measure that is undefined: null)."""
    return json.dumps(json_safe(obj), indent=2, sort_keys=True, default=str)


def to_json_line(obj) -> str:
    """Stable, sorted JSON on one line (one record of a JSON Lines stream).

    >>> to_json_line({"source": "a  b.eml", "p": 0.5})
    '{"p": 0.5, "source": "a  b.eml"}'
    """
    return json.dumps(obj, sort_keys=True, default=str)


def number(x) -> str:
    return "n/a" if x is None or x != x else f"{x:.4f}"


def fixed(x, places: int) -> str:
    """``x`` with ``places`` decimals, or n/a where it is undefined (NaN)."""
    return "n/a" if x is None or x != x else f"{x:.{places}f}"


def percent(x) -> str:
    return "   n/a" if x != x else f"{100 * x:6.2f}%"


def render_evaluation(ev: dict, title: str = "evaluation") -> str:
    """Two-class or multi-class measures as a small table."""
    if "spam_recall" in ev:
        pos, neg = ev.get("positive", "spam"), ev.get("negative", "ham")
        w = max(len(pos), len(neg), 4) + 11
        lines = [
            f"{title}: {counted(ev['n'], 'message')}" + (f" (positive class: {pos})" if pos != "spam" else ""),
            # what the filter decided comes first; the measures below are the ranking's, at 0.5
            *([render_costs(ev["costs"]), "  at P(spam) 0.5, without an unsure band (the ranking's view, not the "
                                          "decisions above):"] if "costs" in ev else []),
            f"  {'accuracy':<{w}} {percent(ev['accuracy'])}",
            f"  {pos + ' recall':<{w}} {percent(ev['spam_recall'])}   ({ev['tp']} of {ev['tp'] + ev['fn']} {pos} caught)",
            f"  {neg + ' recall':<{w}} {percent(ev['ham_recall'])}   ({ev['fp']} of {ev['tn'] + ev['fp']} {neg} misfiled)",
            f"  {pos + ' precision':<{w}} {percent(ev['spam_precision'])}",
            f"  {'F1 (' + pos + ')':<{w}} {percent(ev['f1'])}",
            f"  {'Jaccard (' + pos + ')':<{w}} {percent(ev['jaccard'])}   TP / (TP + FP + FN)",
            f"  {'ROC AUC':<{w}} {ev['auc']:.4f}" if ev["auc"] == ev["auc"] else f"  {'ROC AUC':<{w}}    n/a",
            f"  {'confusion':<{w}} {neg}->{neg} {ev['tn']}  {neg}->{pos} {ev['fp']}  {pos}->{neg} {ev['fn']}  "
            f"{pos}->{pos} {ev['tp']}",
            f"  {'MCC':<{w}} {ev['mcc']:.4f}",
            f"  {'TREC':<{w}} (1-ROCA)% {fixed(100 * (1 - ev['auc']), 3)}  hm% {fixed(ev['hm_pct'], 2)}  "
            f"sm% {fixed(ev['sm_pct'], 2)}  lam% {fixed(ev['lam_pct'], 2)}",
            *([f"  {'':<{w}} only {', '.join(ev['one_class'])} here: ranking measures need messages of both classes"]
              if ev.get("one_class") else []),
            *caught_lines(ev, indent="                  "),
        ]
        if "familiarity" in ev:
            f = ev["familiarity"]
            g = f["guarded"]
            lines.append(f"  familiarity     median {f['median']:.0%} of a message's tokens known (training: "
                         f"99% of messages above {f['floor']:.0%}, 95% above {f['typical']:.0%}); " + guard_text(g))
        return "\n".join(lines)
    ovr = ev.get("one_vs_rest")
    lines = [f"{title}: {counted(ev['n'], 'message')}, accuracy {percent(ev['accuracy'])}, macro F1 {percent(ev['macro_f1'])}",
             f"  {'class':<16} {'precision':>9} {'recall':>9} {'F1':>9} {'support':>8}"
             + (f" {'ROC AUC':>8} {'avg prec':>8}" if ovr else "")]
    for label, s in ev["per_class"].items():
        rank = ""
        if ovr:
            o = ovr["per_class"].get(label, {})
            rank = f" {number(o.get('auc')):>8} {number(o.get('average_precision')):>8}"
        lines.append(f"  {label:<16} {percent(s['precision']):>9} {percent(s['recall']):>9} {percent(s['f1']):>9} "
                     f"{s['support']:>8}{rank}")
    if ovr:
        lines.append("  one-vs-rest     " + "   ".join(
            f"{kind} AUC {number(ovr[kind]['auc'])}, AP {number(ovr[kind]['average_precision'])}"
            for kind in ("macro", "weighted", "micro")))
    if "confusion" in ev:
        labels = ev.get("labels", list(ev["per_class"]))
        width = max(8, *(len(label) + 1 for label in labels))
        lines.append("  confusion (rows: true, columns: decided)")
        lines.append("  " + " " * 16 + "".join(f"{label:>{width}}" for label in labels))
        for label, row in zip(labels, ev["confusion"]):
            lines.append(f"  {label:<16}" + "".join(f"{n:>{width}}" for n in row))
    if "costs" in ev:
        lines.append(render_costs(ev["costs"]))
    return "\n".join(lines)


def render_unreadable(corpora: list) -> list[str]:
    """Lines naming the messages a run could not read (it went on without them)."""
    lines = []
    for c in corpora:
        n = c.get("skipped", {}).get("unreadable", 0)
        if n:
            lines.append(f"{counted(n, 'message')} of {c['path']} could not be read and were left out:")
            lines.extend(f"  {why}" for why in c.get("unreadable", [])[:20])
            if n > 20:
                lines.append(f"  ... and {n - 20} more (--json lists up to 100)")
    return lines


def render_train(report, output: str) -> str:
    """What ``spamkit train`` prints after saving a filter."""
    classes = ", ".join(f"{k} {v}" for k, v in report.train_per_class.items())
    lines = [f"trained on {counted(report.n_train, 'message')} ({classes}) in {report.seconds_train:.2f} s; "
             f"{report.n_features} features"]
    if report.parse_fallbacks:
        lines.append("parse fallbacks: " + ", ".join(f"{k} {v}" for k, v in report.parse_fallbacks.items()))
    if report.evaluation is not None:
        split = report.split
        held = ", ".join(f"{k} {v}" for k, v in report.test_per_class.items())
        lines.append(f"held out {counted(report.n_test, 'message')} ({held}) by a {split['method']} split "
                     f"(test fraction {split['test_fraction']}, seed {split['seed']}), not used for training")
        lines.append(render_evaluation(report.evaluation, "held-out evaluation"))
    lines.append(f"filter written to {output}")
    return "\n".join(lines)


def _describe_costs(decision: dict) -> str:
    """A saved decision layer in words; for ham/spam costs with an unsure row, its P(spam) band."""
    band = decision.get("band")
    if band and len(band) == 2:
        cost = {(d, c): v for d, row in zip(decision["decisions"], decision["costs"])
                for c, v in zip(decision["classes"], row)}
        return (f"ham below P(spam) {band[0]:g}, spam above {band[1]:g}, unsure between (costs "
                f"fp={cost['spam', 'ham']:g}, fn={cost['ham', 'spam']:g}, unsure={cost['unsure', 'ham']:g})")
    return f"costs over {', '.join(map(str, decision.get('decisions', [])))}"


def _side_model_line(kind: str, spec: dict) -> str:
    """A stack's side model, from its settings as the file keeps them (``kind``: "context" or "grams")."""
    if kind == "context":
        head = (f"context     a byte context model per class (order {spec['order']}, beta {spec['beta']:g}, "
                f"2**{spec['bits']} slots a class) over the first {spec['max_bytes']} bytes of each message")
        mb, unlearning = (8 << spec["bits"]) >> 20, "exact"
    else:
        head = (f"byte grams  online logistic regression on the byte 4-grams of the first {spec['n_bytes']} bytes "
                f"of each message (2**{spec['bits']} weights, rate {spec['rate']:g})")
        mb, unlearning = (4 << spec["bits"]) >> 20, "approximate (a step back)"
    return f"  {head}, a side input of the stack; {mb} MB in memory; unlearning {unlearning}"


def _calibration_line(calibration: dict) -> str:
    if calibration["method"] == "platt":
        return (f"  calibration platt: P(spam) = 1 / (1 + exp(-({calibration['a']:.4g} * "
                f"log-odds + {calibration['b']:.4g})))")
    return (f"  calibration {calibration['method']}: a monotone map of {len(calibration['x']) // 2} "
            f"blocks fitted on {calibration['n']} cross-validated scores")


def _threshold_line(threshold: dict) -> str:
    return (f"  threshold   spam above P(spam) = {threshold['p_spam']:.6g} (chosen by "
            f"{threshold.get('folds', '?')}-fold cross-validation, fp={threshold.get('c_fp', '?')}, "
            f"fn={threshold.get('c_fn', '?')})")


def _guard_line(familiar: dict) -> str:
    g = guard_settings(familiar)
    drift = g["typical"] - g["drift"] * max(g["typical"] - g["floor"], 0.0)
    return (f"  guard       spam becomes unsure for a message with under {g['floor']:.0%} known tokens; "
            f"under {g['typical']:.0%}, spam needs up to {g['margin']:g} more log-odds; and while the "
            f"median of the last {g['window']} is under {drift:.0%} (mail unlike the training mail)")


#: what ``spamkit info`` says of a filter file's extras, in this order: (the key in the manifest's
#: ``extra``, its line), each where the file has it
EXTRA_LINES = (("context", partial(_side_model_line, "context")), ("grams", partial(_side_model_line, "grams")),
               ("calibration", _calibration_line),
               ("threshold", _threshold_line), ("decision", lambda d: f"  decision    {_describe_costs(d)}"),
               ("spam_cut", lambda c: f"  spam cut    spam only above P(spam) {c['p_spam']:.6g}, chosen on the "
                                      f"{c['judged']} messages spamkit learn --all-mail judged"),
               ("familiarity", _guard_line))


def render_info(manifest: dict, path: str) -> str:
    """A filter file's manifest for people."""
    m, v, a, t = manifest["model"], manifest["vectorizer"], manifest["analyzer"], manifest.get("training", {})
    # (a stack's side_inputs is shown where it has some: the context line below says what they are;
    # a combiner's prior where it has one)
    params = ", ".join(f"{k}={val}" for k, val in m["params"].items()
                       if not (k == "side_inputs" and not val) and not (k == "combiner_center" and val is None))
    vec = ", ".join(f"{k}={val}" for k, val in v.items() if val is not None)
    ana = (", ".join(f"{k}={val}" for k, val in a.items() if k not in ("stop_word_list", "token_pattern"))
           if a.get("lexer", "spamkit") != "bogofilter" else "bogofilter 1.2's lexer on the raw message")
    lines = [f"{path}",
             f"  format      {manifest['format']} v{manifest['format_version']} "
             f"(written by spamkit {manifest['spamkit_version']} on {manifest['created']})",
             f"  model       {m['type']} ({params})",
             f"  classes     {', '.join(map(str, m['classes']))}",
             f"  features    {m['n_features']} ({vec})",
             f"  analyzer    {ana}"]
    if m["type"] == "logistic" or (m["type"] == STACK_MODEL and m["params"].get("logistic")):
        lines.append("  unlearning  approximate: a logistic regression learns by gradient steps, and a step "
                     "cannot be subtracted exactly (spamkit learn --forget takes a step back)")
    extras = manifest.get("extra", {})
    lines.extend(describe(extras[key]) for key, describe in EXTRA_LINES if extras.get(key))
    if t:
        per_class = ", ".join(f"{k} {n}" for k, n in t.get("per_class", {}).items())
        lines.append(f"  trained on  {counted(t.get('n_messages'), 'message')} ({per_class})")
        for c in t.get("corpora", []):
            lines.append(f"              {c['path']} ({c['format']}, {c['container']})")
        if t.get("imported"):
            p = t["imported"].get("parameters", {})
            lines.append(f"  imported    {t['imported'].get('tokens')} tokens from a bogofilter word list; "
                         + ", ".join(f"{k}={v:g}" for k, v in p.items()))
        if t.get("held_out_evaluation"):
            ev = t["held_out_evaluation"]
            extra = f", AUC {ev['auc']:.4f}" if "auc" in ev else ""
            lines.append(f"  held out    {counted(ev['n'], 'message')}: accuracy {percent(ev['accuracy']).strip()}{extra}")
    return "\n".join(lines)


def render_import(imported: dict, output: str) -> str:
    """What ``spamkit import-wordlist`` prints after saving a filter."""
    p = imported["parameters"]
    skipped = imported.get("skipped", 0)
    return (f"imported {imported['tokens']} tokens from {imported['from']}"
            + (f" ({skipped} left out: longer than a filter file's line, 4,096 bytes)" if skipped else "") + "\n"
            f"bogofilter parameters: robs {p['robs']:g}, robx {p['robx']:g}, min_dev {p['min_dev']:g}; "
            f"ham below {p['ham_cutoff']:g}, spam from {p['spam_cutoff']:g}, unsure between\n"
            f"filter written to {output}")


def guard_text(g: dict) -> str:
    """What the familiarity guard did, in numbers that add up: the spam decisions it made unsure,
    by its two rules, then how many messages each rule found.

    >>> guard_text({"spam_to_unsure": 5, "spam_to_unsure_unfamiliar": 2, "spam_to_unsure_drift": 3,
    ...             "unfamiliar": 9, "drift": 40})
    '5 spam decisions made unsure (2 of a message unlike the training mail, 3 in a stream unlike it); of all messages, 9 less familiar than usual, 40 judged in a drifted stream'
    """
    made = g.get("spam_to_unsure", 0)
    alone, drift = g.get("spam_to_unsure_unfamiliar", 0), g.get("spam_to_unsure_drift", 0)
    return (f"{counted(made, 'spam decision')} made unsure ({alone} of a message unlike the training mail, {drift} "
            f"in a stream unlike it); of all messages, {g.get('unfamiliar', 0)} less familiar than usual, "
            f"{g.get('drift', 0)} judged in a drifted stream")


def render_costs(c: dict) -> str:
    """Decisions under a cost matrix and the cost per message."""
    m = c["matrix"]
    head = "  the filter's decisions, under costs " + ", ".join(
        f"{d}|{cls}={v:g}" for d, row in zip(m["decisions"], m["costs"]) for cls, v in zip(m["classes"], row) if v)
    lines = [head]
    if c.get("saved_threshold") is not None:
        lines.append(f"    decided at the saved threshold on P(spam): {c['saved_threshold']:.4f} (spamkit threshold "
                     "--save)" + (f"; the costs' Bayes threshold would be {c['threshold']:.4f}"
                                  if c.get("threshold") is not None else ""))
    elif c.get("threshold") is not None:
        lines.append(f"    Bayes threshold on P(spam): {c['threshold']:.4f}")
    for cls, row in c["decisions"].items():
        lines.append(f"    true {cls:<10} " + "  ".join(f"-> {d} {n}" for d, n in row.items()))
    lines.append(f"    cost per message: {c['cost_per_message']:.4f}" + (
        f" (the probabilities expected {c['expected_cost_per_message']:.4f})" if "expected_cost_per_message" in c else ""))
    return "\n".join(lines)


def caught_lines(m: dict, indent: str = "  ") -> list[str]:
    """The spam caught at ham-misfiled rates of 0.1% and 0.01% (ROC read-off), when measured."""
    lines = []
    pos, neg = m.get("positive", "spam"), m.get("negative", "ham")
    for rate, value in (m.get("spam_caught_pct_at_hm") or {}).items():
        per = int(rate.split("/")[1])
        shown = f"{value:.2f}%" if value is not None else f"not measurable (fewer than {per:,} {neg})"
        lines.append(f"{indent}{pos} caught at {100 / per:g}% {neg} misfiled: {shown}")
    return lines


def render_online_classes(r: dict) -> str:
    """An online run over any number of classes: the K-class measures and the learning curve."""
    lines = [render_evaluation(r["measures"], f"online, {len(r['classes'])} classes, classified before learning")]
    lines.append(f"  log loss        {r['measures']['log_loss']:.4f}")
    lines.append("  learning curve  accuracy over a sliding window: " + ", ".join(
        f"{p['end']}: {percent(p['accuracy']).strip()}" for p in r["learning_curve"]))
    if r.get("messages_per_second"):
        lines.append(f"  throughput      {r['messages_per_second']:.0f} messages/s")
    return "\n".join(lines)


def render_online(r: dict, output: str | None) -> str:
    """An online (TREC-style) run's summary."""
    m, st = r["measures"], r["settings"]
    if st["model"] in (FISHER_MODEL, STACK_MODEL):
        f = st.get("fisher", {})
        context = st.get("context")
        stacked = "Robinson/Fisher + multinomial NB" + (
            f" + logistic regression (rate {f['logistic']:g})" if f.get("logistic") else "") + (
            f" + a byte context model per class (order {context['order']}, 2^{context['bits']} slots, the first "
            f"{context['max_bytes']} bytes)" if context else "") + (
            f" + logistic regression on byte 4-grams (the first {st['grams']['n_bytes']} bytes, 2^{st['grams']['bits']} "
            f"weights, rate {st['grams']['rate']:g})" if st.get("grams") else "") + ", stacked"
        model = (f"{stacked if st['model'] == 'fisher-nb' else 'Robinson/Fisher'}, s {f.get('strength')}, "
                 f"x {f.get('prior')}, min_dev {f.get('min_dev')}, max_clues {f.get('max_clues')}")
    elif st["model"] == "logistic":
        model = f"online logistic regression, rate {st.get('rate')}"
    elif st["model"] == "grams":
        g = st["grams"]
        model = (f"online logistic regression on the byte 4-grams of the first {g['n_bytes']} bytes, 2^{g['bits']} "
                 f"weights, rate {g['rate']:g}")
    else:
        model = f"{st['model']} NB, alpha {st['alpha']}"
    regime = st.get("regime", "all")
    hashed = f", {st['hashing']} hashed columns" if "hashing" in st else ""
    lines = [f"online: {counted(r['n'], 'message')} classified, {r['n_learned']} learned (regime: {regime}); "
             f"{model}{hashed}, delay {st['delay']}, "
             f"feedback {st['feedback_fraction']:g}",
             f"  (1-ROCA)%  {m['roca_pct']:.4f}",
             f"  hm%        {m['hm_pct']:.3f}   (ham called spam, at P(spam) > 0.5)",
             f"  sm%        {m['sm_pct']:.3f}   (spam let through)",
             f"  lam%       {m['lam_pct']:.3f}",
             *caught_lines(m)]
    d = m.get("default_decision")
    if d:
        lines.append(f"  costs' cut (ham below P(spam) {d['low']:g}, spam above {d['high']:g}): ham misfiled "
                     f"{d['ham_misfiled']:.3f}%, ham unsure {d['ham_unsure']:.3f}%; spam caught "
                     f"{d['spam_caught']:.2f}%, spam unsure {d['spam_unsure']:.2f}%")
    c = m.get("stream_cut_decision")
    if c:
        lines.append(f"  default decision told every label (spamkit learn --all-mail: the spam cut chosen on the "
                     f"stream so far, from {c['high_range'][0]:g} to {c['high_range'][1]:g}, last {c['high']:g}): ham misfiled {c['ham_misfiled']:.3f}%, ham unsure "
                     f"{c['ham_unsure']:.3f}%; spam caught {c['spam_caught']:.2f}%, spam unsure {c['spam_unsure']:.2f}%")
    if "active" in st:
        lines.append(f"  active     asked for {st['asked']} of at most {st['active']} labels (b {st['active_b']:g})")
    lines.append(f"  speed      {r['messages_per_second']:.0f} messages/s ({r['seconds']:.1f} s)")
    curve = r.get("learning_curve") or []
    if curve:
        lines.append(f"  learning curve: (1-ROCA)% of the last (up to) {curve[-1]['end'] - curve[-1]['start']} "
                     "messages, at")
        lines.append("    " + "  ".join(f"{p['end']}: " + (f"{p['roca_pct']:.3f}" if p["roca_pct"] is not None
                                                          else "n/a") for p in curve))
    if output:
        lines.append(f"TREC results written to {output}")
    return "\n".join(lines)


def render_classification(record: dict) -> str:
    """One ``spamkit classify`` line, SOURCE<TAB>DECISION<TAB>P(spam) (or every class's probability),
    a fourth column ``guard:RULE`` where the familiarity guard turned spam into unsure (RULE
    ``unfamiliar``: the message itself; ``drift``: the mail before it in the run), and with
    ``--explain`` the tokens or neighbours behind it."""
    score = (f"{record['p_spam']:.6f}" if "p_spam" in record
             else " ".join(f"{c}={p:.4f}" for c, p in record["probabilities"].items()))
    guard = record.get("guard")
    lines = [f"{record['source']}\t{record['class']}\t{score}" + (f"\tguard:{guard['rule']}" if guard else "")]
    ex = record.get("explanation")
    if ex and "neighbours" in ex:
        for nb in ex["neighbours"]:
            measure = "similarity" if "similarity" in nb else "distance"
            lines.append(f"  neighbour {nb['id']}\t{nb['label']}\t{measure} {nb[measure]:.4f}\tweight {nb['weight']:.4g}")
    elif ex:
        a, b = ex["classes"]
        lines.append(f"  towards {a}: " + ", ".join(f"{t} {w:+.2f}" for t, w in ex["towards"]))
        lines.append(f"  towards {b}: " + ", ".join(f"{t} {w:+.2f}" for t, w in ex["against"]))
    return "\n".join(lines)


def render_condensed(c: dict) -> str:
    """What kNN condensing kept."""
    return (f"condensed: kept {c['n_after']} of {c['n_before']} training messages "
            f"({c['n_edited']} edited out first; {c['passes']} passes)")


def render_engine_run(run: dict, scheduler: str, what: str) -> str:
    """One line on what the Dask engine did (``run``: :meth:`spamkit.jobs.distributed.RunReport.as_dict`)."""
    how = "shipped" if run["bytes_in"] >= run["mail_bytes"] else "read by the workers"
    return (f"engine: dask ({scheduler}): {what} {run['n_messages']} messages in {run['n_partitions']} partitions; "
            f"{run['mail_bytes'] / 1e6:.1f} MB of mail ({how}), {run['bytes_in'] / 1e6:.2f} MB sent"
            + (f", {run['bytes_out'] / 1e6:.1f} MB of counts back, reduce {run['reduce_seconds']:.2f} s"
               if run["bytes_out"] else "")
            + f"; {run['worker_seconds']:.1f} s of worker time, wall {run['wall_seconds']:.1f} s")
