"""Denoiser models as plain tf.Modules (the U-Net, the spectral mask) and the model card that builds them."""
