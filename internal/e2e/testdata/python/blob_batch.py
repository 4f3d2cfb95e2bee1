"""Drives Tabula's Blob Batch through the Python SDK (Debian's python3-azure): a container's
delete_blobs with snapshots, a partial failure, and set_standard_blob_tier_blobs. Python writes
its sub-requests as "/container/blob?" without the account, whatever the endpoint's style.
Usage: python3 blob_batch.py <connection string>. Exits non-zero on the first mismatch."""
import sys

from azure.storage.blob import BlobServiceClient, StandardBlobTier
from azure.storage.blob._shared.response_handlers import PartialBatchErrorException

svc = BlobServiceClient.from_connection_string(sys.argv[1])
c = svc.get_container_client("pybatch")
c.create_container()
for name in ["a", "b c", "dir/d", "e"]:
    c.upload_blob(name, b"x")
c.get_blob_client("a").create_snapshot()

statuses = [r.status_code for r in c.delete_blobs("a", "b c", "dir/d", delete_snapshots="include")]
assert statuses == [202, 202, 202], statuses
left = [b.name for b in c.list_blobs(include=["snapshots"])]
assert left == ["e"], left

statuses = [r.status_code for r in c.set_standard_blob_tier_blobs(StandardBlobTier.COOL, "e")]
assert statuses == [200], statuses
tier = c.get_blob_client("e").get_blob_properties().blob_tier
assert tier == "Cool", tier

try:
    c.delete_blobs("e", "missing")
    raise AssertionError("a batch with a missing blob raised nothing")
except PartialBatchErrorException as e:
    assert [p.status_code for p in e.parts] == [202, 404], e.parts
assert [b.name for b in c.list_blobs()] == []

c.delete_container()
print("python blob batch: ok")
