"""Analysis of sketch/image rating studies (Eitz et al. 2011, Sec. 3).

Loading and validating ratings, and importing those collected with other tools
(long tables, PsychoPy Builder and jsPsych data, survey tools' wide exports); rank
agreement (Kendall's tau_b and W, and over every rating Krippendorff's alpha and the
Skillings-Mack test), the consensus ground truth, anchoring consistency, the
reliability of the consensus (split-half, Spearman-Brown, intraclass correlations), the
distribution of ratings, significance summaries of test families, and simulated
participants; and scoring retrieval runs against the ground truth: the runs and
their measures, distance measures between descriptors, a baseline engine,
comparisons between systems, and HPatches-format scoring. Nothing here imports PsychoPy, and only
``sbir_study.analysis.figures`` imports matplotlib, when figures are drawn.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=[
        "agreement",
        "agreement_tables",
        "catch",
        "consensus",
        "corrections",
        "cube",
        "distribution",
        "exclusion",
        "figures",
        "importers",
        "limits",
        "orientation",
        "pipeline",
        "power",
        "rating_files",
        "ratings",
        "reliability",
        "report",
        "significance",
        "simulate",
        "validation",
        "wording",
        "retrieval",
    ],
    submod_attrs={
        "agreement": [
            "KendallTauResult",
            "KendallWResult",
            "KrippendorffAlphaResult",
            "PairwiseTauResult",
            "SkillingsMackResult",
            "kendall_tau_b",
            "kendall_w",
            "krippendorff_alpha",
            "pairwise_kendall_tau",
            "skillings_mack",
        ],
        "agreement_tables": [
            "SketchPairsResult",
            "agreement_by_sketch",
            "inter_user_tau",
            "inter_user_tau_pairs",
            "kendall_w_by_sketch",
            "krippendorff_alpha_overall",
        ],
        "consensus": [
            "anchoring_consistency",
            "consensus_ground_truth",
            "participant_vs_consensus",
            "write_qrels",
        ],
        "corrections": [
            "benjamini_hochberg_count",
            "holm_adjusted",
        ],
        "cube": [
            "RatingCube",
            "rating_cube",
        ],
        "distribution": [
            "binned_medians",
            "rating_distribution",
        ],
        "importers": [
            "IMPORT_COLUMNS",
            "JSPSYCH_COLUMNS",
            "JSPSYCH_TRIAL_TYPES",
            "WIDE_MAPPING_COLUMNS",
            "ImportedRatings",
            "ImportedRatingsWarning",
            "read_jspsych",
            "read_long_table",
            "read_psychopy",
            "read_wide",
            "read_wide_mapping",
            "write_imported_dataset",
        ],
        "orientation": [
            "in_paper_orientation",
            "ratings_scale",
        ],
        "pipeline": [
            "AnalysisOptions",
            "analyze_ratings",
        ],
        "ratings": [
            "Provenance",
            "SourceFile",
            "load_ratings",
        ],
        "reliability": [
            "intraclass_correlations",
            "raters_needed",
            "spearman_brown",
            "split_half_reliability",
        ],
        "significance": [
            "FamilySummary",
            "summarize_family",
            "wilson_interval",
        ],
        "simulate": [
            "RaterModel",
            "StudyDesign",
            "simulate_study",
            "write_simulated_dataset",
        ],
        "validation": [
            "PHASES",
            "RATING_COLUMNS",
            "RatingsWarning",
            "validate_ratings",
        ],
    },
)
