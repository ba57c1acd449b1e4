"""Built-in device plugins, one module per device."""
