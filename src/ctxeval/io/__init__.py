"""Reading datasets: files, DataFrames and iterables into validated records.

See ``docs/datasets.md`` for the formats, the field names recognised and the error messages. The
record types and their schema live in :mod:`ctxeval.records.model`; they are re-exported here.
"""

from ctxeval.io.fields import FieldMap, ResolvedFields, resolve_fields
from ctxeval.io.readers import read_records
from ctxeval.io.sources import SUPPORTED_FORMATS
from ctxeval.records.model import Mode, Record, RecordError

__all__ = [
    "SUPPORTED_FORMATS",
    "FieldMap",
    "Mode",
    "Record",
    "RecordError",
    "ResolvedFields",
    "read_records",
    "resolve_fields",
]
