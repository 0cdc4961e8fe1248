"""Training: the explicit strategy.run step, loss scaling, AdamW, the program around them."""
