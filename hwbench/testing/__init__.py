"""Test helpers for hwbench users and plugin authors (pytest plugin, strategies, conformance)."""
