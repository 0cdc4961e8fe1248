"""Losses, metrics (SI-SDR, PESQ, STOI) and the distributed evaluation pass."""
