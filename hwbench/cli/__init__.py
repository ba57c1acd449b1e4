"""The ``hwbench`` command."""
