"""Judging: what a ranked list earned (relevant ranks, hits, gains, ties) from a relevance
matrix, from ids and qrels, from a whole run, or from spans."""
