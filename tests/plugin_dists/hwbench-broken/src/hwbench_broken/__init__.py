"""Deliberately broken hwbench plugins (test fixtures of hwbench's failure isolation)."""
