"""Repository-level pytest configuration (the plugin itself is loaded through its entry point)."""
