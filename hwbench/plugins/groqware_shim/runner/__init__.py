"""The shim's ``groq.runner``: :mod:`.tsp` runs compiled programs (``create_tsp_runner``)."""
