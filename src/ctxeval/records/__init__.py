"""Records: the record model, its field checks and the value types records carry (spans,
graded texts)."""
