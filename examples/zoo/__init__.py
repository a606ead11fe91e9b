"""A small model zoo for the fxscope demo: clean models, untraceable lines, hazards."""
