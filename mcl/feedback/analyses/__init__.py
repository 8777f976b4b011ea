"""Analyses: one module per kind of feedback, each a function of an `AnalysisContext` that
returns messages (mcl.feedback.registry lists them in report order).

An analysis reads facts (mcl.feedback.facts) and never imports another analysis
(docs/architecture.md, "Feedback in layers").
"""
