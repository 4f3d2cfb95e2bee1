"""Metadata names through the Python SDK (Debian's python3-azure): they come back in the case
they were set in, and names that Python's signer sorts by its own ranking ('_' before digits)
are signed in an order the server accepts.

Usage: metadata_names.py BLOB_CONNECTION_STRING QUEUE_CONNECTION_STRING
"""
import sys

from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

blob_conn, queue_conn = sys.argv[1], sys.argv[2]
want = {"Author": "a", "lowercase": "b", "MiXeD_9": "c", "a_": "d", "a0": "e", "a_b": "f", "a1b": "g"}

service = BlobServiceClient.from_connection_string(blob_conn)
container = service.create_container("pymeta", metadata={"ContainerOwner": "o"})
blob = container.upload_blob("b", b"data", metadata=want)
got = container.get_blob_client("b").get_blob_properties().metadata
assert dict(got) == want, f"Get Blob Properties: {dict(got)}"
listed = {b.name: dict(b.metadata) for b in container.list_blobs(include=["metadata"])}
assert listed == {"b": want}, f"List Blobs: {listed}"
container.get_blob_client("b").set_blob_metadata({"NewName": "n", "x_1": "1", "x1": "2"})
got = container.get_blob_client("b").get_blob_properties().metadata
assert dict(got) == {"NewName": "n", "x_1": "1", "x1": "2"}, f"after Set Blob Metadata: {dict(got)}"
got = container.get_container_properties().metadata
assert dict(got) == {"ContainerOwner": "o"}, f"Get Container Properties: {dict(got)}"

queues = QueueServiceClient.from_connection_string(queue_conn)
queue = queues.create_queue("pymeta", metadata={"QueueOwner": "q", "a_": "1", "a0": "2"})
got = queue.get_queue_properties().metadata
assert dict(got) == {"QueueOwner": "q", "a_": "1", "a0": "2"}, f"Get Queue Metadata: {dict(got)}"
print("python metadata names: ok")
