from . import (
    builder as builder,
    cells as cells,
    dataset as dataset,
    delimited as delimited,
    jspsych as jspsych,
    long_table as long_table,
    wide as wide,
)
from .builder import (
    read_psychopy as read_psychopy,
)
from .cells import (
    IMPORT_COLUMNS as IMPORT_COLUMNS,
)
from .dataset import (
    ImportedRatings as ImportedRatings,
    ImportedRatingsWarning as ImportedRatingsWarning,
    write_imported_dataset as write_imported_dataset,
)
from .jspsych import (
    JSPSYCH_COLUMNS as JSPSYCH_COLUMNS,
    JSPSYCH_TRIAL_TYPES as JSPSYCH_TRIAL_TYPES,
    read_jspsych as read_jspsych,
)
from .long_table import (
    read_long_table as read_long_table,
)
from .wide import (
    WIDE_MAPPING_COLUMNS as WIDE_MAPPING_COLUMNS,
    read_wide as read_wide,
    read_wide_mapping as read_wide_mapping,
)
