"""The run record (`run.json`): the one contract between capture and analysis.

Records are plain JSON-compatible dicts, validated against `run.schema.json` on load and on
write. This module never imports a deep-learning framework.
"""

from perfsuite.record.io import (
    RecordError,
    find_records,
    load_record,
    load_records,
    validate_record,
    write_json_atomic,
    write_record,
)
from perfsuite.record.model import (
    PROVENANCES,
    SCHEMA_VERSION,
    new_record,
    new_run_id,
    quantity,
    qvalue,
)

__all__ = [
    "PROVENANCES",
    "SCHEMA_VERSION",
    "RecordError",
    "find_records",
    "load_record",
    "load_records",
    "new_record",
    "new_run_id",
    "quantity",
    "qvalue",
    "validate_record",
    "write_json_atomic",
    "write_record",
]
