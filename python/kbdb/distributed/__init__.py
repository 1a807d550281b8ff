"""The distributed room: learn and re-embed on a Ray cluster, storing through the one
writer (SPEC §17). Ray is imported only when a pipeline runs (``pip install 'kbdb[ray]'``):
importing this package costs nothing more than the learn room does."""

from kbdb.distributed.cluster import AUTO, LOCAL, connect, import_ray
from kbdb.distributed.pipeline import RunStats, embed_sections, learn_paths

__all__ = ["AUTO", "LOCAL", "RunStats", "connect", "embed_sections", "import_ray", "learn_paths"]
