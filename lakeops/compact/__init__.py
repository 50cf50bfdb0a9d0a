"""LSM compaction: levels, strategies (pure objects), unit execution, per-bucket compactors.

The package exports the strategies of :mod:`lakeops.compact.strategy` (its ``__all__``).
"""

from lakeops.compact.strategy import *  # noqa: F403 - the strategies are the package's API
from lakeops.compact.strategy import __all__ as __all__
