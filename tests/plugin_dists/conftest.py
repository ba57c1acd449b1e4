"""The distributions in this folder are installed into a throwaway virtualenv by
``tests/test_plugin_install.py``, which also runs the example plugin's own tests there.
hwbench's own test run must not collect them: their packages are not installed here.
"""

collect_ignore_glob = ["*"]
