"""pytest plugin registered through the ``pytest11`` entry point (fixtures grow with issue 7)."""
