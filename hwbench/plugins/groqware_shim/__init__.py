"""GroqWare SDK compat shim (package docstring pending)."""
