"""Reading datasets: files, DataFrames and iterables into validated records.

See ``docs/datasets.md`` for the formats, the field names recognised and the error messages.
"""

from ctxeval.io.fields import FieldMap, ResolvedFields, resolve_fields
from ctxeval.io.readers import SUPPORTED_FORMATS, read_records
from ctxeval.io.records import Mode, Record, RecordError

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
