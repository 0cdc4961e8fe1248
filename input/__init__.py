"""Input side: int16 TFRecord shards, corpus preparation, synthetic data and tf.data pipelines."""

from common import requirements

requirements.require_tensorflow()
