"""Django models for automated face evaluation runs and per-video scores."""
