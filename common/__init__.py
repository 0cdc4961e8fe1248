"""Helpers every package shares: argument checks, atomic file writes, progress lines."""
