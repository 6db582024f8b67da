"""Ready-made criteria: `from tracejudge.criteria import rag_faithfulness` (or
`from tracejudge import criteria`). They live in `tracejudge.evaluation.criteria`."""

from tracejudge.evaluation.criteria import *  # noqa: F403
from tracejudge.evaluation.criteria import __all__  # noqa: F401
