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

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
