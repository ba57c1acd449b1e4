"""Contracts and the plugin host. Nothing here imports a plugin, the CLI or a heavy framework."""
