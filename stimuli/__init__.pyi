from . import (
    generate as generate,
    set_import as set_import,
    manifest as manifest,
    select as select,
    validate as validate,
)
from .generate import (
    SetDesign as SetDesign,
    generate_set as generate_set,
    latent_rating as latent_rating,
)
from .set_import import (
    import_set as import_set,
)
from .manifest import (
    CHECKSUMS as CHECKSUMS,
    MANIFEST as MANIFEST,
    MANIFEST_COLUMNS as MANIFEST_COLUMNS,
    read_manifest as read_manifest,
    set_digest as set_digest,
    write_checksums as write_checksums,
    write_manifest as write_manifest,
)
from .select import (
    Selection as Selection,
    distance_to_uniform as distance_to_uniform,
    select_pairs as select_pairs,
    write_selection as write_selection,
)
from .validate import (
    AnchorDesign as AnchorDesign,
    SetReport as SetReport,
    StimulusSet as StimulusSet,
    load_set as load_set,
    validate_set as validate_set,
)
