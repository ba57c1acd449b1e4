"""Types of the names ``hwbench/__init__.py`` loads lazily (PEP 562): the library API."""

from hwbench.core.distributed import Cluster as Cluster
from hwbench.library.audit import Audit as Audit
from hwbench.library.audit import audit as audit
from hwbench.library.bench import Bench as Bench
from hwbench.library.bench import bench as bench
from hwbench.library.probe import ProbeReport as ProbeReport
from hwbench.library.probe import probe as probe
from hwbench.library.run import Run as Run
from hwbench.library.run import run as run
from hwbench.library.store import ResultsStore as ResultsStore
from hwbench.library.store import open_store as open_store

__version__: str
__all__ = [
    "Audit",
    "Bench",
    "Cluster",
    "ProbeReport",
    "ResultsStore",
    "Run",
    "__version__",
    "audit",
    "bench",
    "open_store",
    "probe",
    "run",
]
