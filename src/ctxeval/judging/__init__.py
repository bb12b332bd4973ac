"""Judging: what a ranked list earned (relevant ranks, hits, gains, ties) from a relevance matrix, ids and qrels, a whole run or spans."""
