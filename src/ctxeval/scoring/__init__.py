"""Scoring: a run's plan, each batch judged and measured at every cut-off, handed on as columns."""
