"""Scores to decisions, and measures of them.

Takes a model's log-odds or class probabilities and gives calibrated probabilities
(:mod:`~spamkit.decide.calibration`), decisions by expected cost with an unsure band and a
familiarity guard (:mod:`~spamkit.decide.decision`), thresholds and folds chosen on held-out
scores (:mod:`~spamkit.decide.selection`) and ROC, PR, AUC and TREC measures
(:mod:`~spamkit.decide.metrics`).
"""
