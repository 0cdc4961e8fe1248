"""Helpers every package shares: atomic file writes, progress lines."""
