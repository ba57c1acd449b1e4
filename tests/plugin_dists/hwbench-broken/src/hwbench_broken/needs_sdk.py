"""A plugin whose vendor SDK is missing: importing it fails, as a real one's would."""

raise ImportError("needs vendor SDK libfoo.so")
