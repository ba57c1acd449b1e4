"""hwbench-example: a complete, minimal third-party hwbench plugin (see docs/plugin-authors.md).

Importing this package is cheap on purpose: hwbench imports every plugin's entry-point module
each time ``hwbench`` starts, so a plugin must not import an SDK or a framework at import time.
"""

__version__ = "0.1.0"
