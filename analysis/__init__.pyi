from . import (
    agreement as agreement,
    agreement_tables as agreement_tables,
    catch as catch,
    consensus as consensus,
    corrections as corrections,
    cube as cube,
    distribution as distribution,
    exclusion as exclusion,
    figures as figures,
    importers as importers,
    limits as limits,
    options as options,
    orientation as orientation,
    participant_table as participant_table,
    pipeline as pipeline,
    power as power,
    rating_files as rating_files,
    ratings as ratings,
    reliability as reliability,
    report as report,
    retrieval as retrieval,
    significance as significance,
    simulate as simulate,
    summary as summary,
    table_writers as table_writers,
    validation as validation,
    wording as wording,
)
from .agreement import (
    KendallTauResult as KendallTauResult,
    KendallWResult as KendallWResult,
    KrippendorffAlphaResult as KrippendorffAlphaResult,
    PairwiseTauResult as PairwiseTauResult,
    SkillingsMackResult as SkillingsMackResult,
    kendall_tau_b as kendall_tau_b,
    kendall_w as kendall_w,
    krippendorff_alpha as krippendorff_alpha,
    pairwise_kendall_tau as pairwise_kendall_tau,
    skillings_mack as skillings_mack,
)
from .agreement_tables import (
    SketchPairsResult as SketchPairsResult,
    agreement_by_sketch as agreement_by_sketch,
    inter_user_tau as inter_user_tau,
    inter_user_tau_pairs as inter_user_tau_pairs,
    kendall_w_by_sketch as kendall_w_by_sketch,
    krippendorff_alpha_overall as krippendorff_alpha_overall,
)
from .consensus import (
    anchoring_consistency as anchoring_consistency,
    consensus_ground_truth as consensus_ground_truth,
    participant_vs_consensus as participant_vs_consensus,
    write_qrels as write_qrels,
)
from .corrections import (
    benjamini_hochberg_count as benjamini_hochberg_count,
    holm_adjusted as holm_adjusted,
)
from .cube import (
    RatingCube as RatingCube,
    rating_cube as rating_cube,
)
from .distribution import (
    binned_medians as binned_medians,
    rating_distribution as rating_distribution,
)
from .importers import (
    IMPORT_COLUMNS as IMPORT_COLUMNS,
    ImportedRatings as ImportedRatings,
    ImportedRatingsWarning as ImportedRatingsWarning,
    JSPSYCH_COLUMNS as JSPSYCH_COLUMNS,
    JSPSYCH_TRIAL_TYPES as JSPSYCH_TRIAL_TYPES,
    WIDE_MAPPING_COLUMNS as WIDE_MAPPING_COLUMNS,
    read_jspsych as read_jspsych,
    read_long_table as read_long_table,
    read_psychopy as read_psychopy,
    read_wide as read_wide,
    read_wide_mapping as read_wide_mapping,
    write_imported_dataset as write_imported_dataset,
)
from .orientation import (
    in_paper_orientation as in_paper_orientation,
    ratings_scale as ratings_scale,
)
from .options import (
    AnalysisOptions as AnalysisOptions,
)
from .pipeline import (
    analyze_ratings as analyze_ratings,
)
from .ratings import (
    Provenance as Provenance,
    SourceFile as SourceFile,
    load_ratings as load_ratings,
)
from .reliability import (
    intraclass_correlations as intraclass_correlations,
    raters_needed as raters_needed,
    spearman_brown as spearman_brown,
    split_half_reliability as split_half_reliability,
)
from .significance import (
    FamilySummary as FamilySummary,
    summarize_family as summarize_family,
    wilson_interval as wilson_interval,
)
from .simulate import (
    RaterModel as RaterModel,
    StudyDesign as StudyDesign,
    simulate_study as simulate_study,
    write_simulated_dataset as write_simulated_dataset,
)
from .validation import (
    PHASES as PHASES,
    RATING_COLUMNS as RATING_COLUMNS,
    RatingsWarning as RatingsWarning,
    validate_ratings as validate_ratings,
)
