"""The scorer: every metric of DESIGN §6 from a run directory alone (see docs/metrics.md)."""

from chaosproxy.scoring.api import Scored, score_run_dir, score_runs, write_outputs
from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.results import Results

__all__ = ["Estimate", "Results", "Scored", "score_run_dir", "score_runs", "write_outputs"]
