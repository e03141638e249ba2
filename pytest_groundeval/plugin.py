"""pytest hooks for pytest-groundeval (hook glue only; logic lives in the other modules)."""
