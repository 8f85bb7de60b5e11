from . import (
    crowd_size as crowd_size,
    distribution as distribution,
    inter_user as inter_user,
    layout as layout,
    participants as participants,
    style as style,
)
from .distribution import (
    plot_bins as plot_bins,
    plot_distribution as plot_distribution,
)
from .inter_user import (
    plot_inter_user as plot_inter_user,
    plot_sketch_extremes as plot_sketch_extremes,
)
from .layout import (
    FIGURES as FIGURES,
    write_figures as write_figures,
)
from .participants import (
    PARTICIPANT_VIEW_LIMIT as PARTICIPANT_VIEW_LIMIT,
    plot_anchoring as plot_anchoring,
    plot_vs_consensus as plot_vs_consensus,
    tau_threshold as tau_threshold,
)
from .crowd_size import (
    plot_power as plot_power,
    plot_reliability_prophecy as plot_reliability_prophecy,
    write_power_figure as write_power_figure,
    write_reliability_figure as write_reliability_figure,
)
