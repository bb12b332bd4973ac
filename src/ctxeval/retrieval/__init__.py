"""Retrieval without a service: embedders that run offline, exact dense search over their
vectors."""
