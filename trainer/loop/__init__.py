"""The outer training loop: the controller, its actions, summaries and checkpoints."""
