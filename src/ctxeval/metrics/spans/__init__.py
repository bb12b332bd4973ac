"""Span measures over character offsets: the readable reference, the vectorised core,
token-counted lengths and the metric objects."""
