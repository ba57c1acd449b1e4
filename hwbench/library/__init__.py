"""The Python library API (``hwbench.audit``, ``run``, ``bench``, ``open_store``) the CLI is a thin layer over."""
