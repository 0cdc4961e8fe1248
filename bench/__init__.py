"""Benchmarks: plain scripts that print tables (`python -m bench.<name>`)."""
