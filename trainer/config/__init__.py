"""absl flags of the training program, one module per concern, each validated into a frozen dataclass.

Defaults are the small, safe values that run anywhere in minutes (the
synthetic corpus at 16 kHz, a small model); flags/*.flags hold the real setups.
"""
