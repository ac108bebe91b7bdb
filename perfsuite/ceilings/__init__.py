"""Device ceilings, in one place: the spec table, measured peaks and their cache.

`ceilings_for(device, dtype)` is the entry point the runner uses to fill a record's
`ceilings` section. Only `measure` imports torch, lazily.
"""

from perfsuite.ceilings.cache import cache_path, load_cache
from perfsuite.ceilings.resolve import (
    ceilings_for,
    device_name,
    device_spec,
    measure_device,
    normalize_device,
    parse_setting,
    set_user_values,
)
from perfsuite.devices.specs import match_spec, normalize_dtype, spec_table

__all__ = [
    "cache_path",
    "ceilings_for",
    "device_name",
    "device_spec",
    "load_cache",
    "match_spec",
    "measure_device",
    "normalize_device",
    "normalize_dtype",
    "parse_setting",
    "set_user_values",
    "spec_table",
]
