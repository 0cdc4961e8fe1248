"""The on-disk format: TFRecord shards of noisy/clean pairs or of single signals (clean, noise, rooms) and their manifest.

One module per job - layout (names, kinds, compression, the Manifest), reader,
writer and the graph-side parser; their public names are gathered here, so
callers write `records.read_manifest(...)`.
"""

from input.records.layout import check_kind
from input.records.layout import check_split_name
from input.records.layout import COMPRESSIONS
from input.records.layout import KINDS
from input.records.layout import Manifest
from input.records.layout import manifest_path
from input.records.layout import MANIFEST_VERSION
from input.records.layout import SAMPLE_DTYPES
from input.records.layout import shard_name
from input.records.layout import split_shards
from input.records.layout import tfrecord_compression
from input.records.parser import parse_batch
from input.records.parser import pcm_to_float
from input.records.parser import to_float
from input.records.reader import find_bad_shards
from input.records.reader import read_manifest
from input.records.reader import require_kind
from input.records.writer import serialize_example
from input.records.writer import ShardWriter
from input.records.writer import write_split
