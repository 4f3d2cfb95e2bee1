// Drives Tabula's Blob service through the official JS SDK (@azure/storage-blob): every
// operation issue 12 lists, signed and parsed the JS SDK's way.
// Usage: node blob-smoke.mjs <connection string>. Exits non-zero on the first mismatch.
import {
  AnonymousCredential, BlobSASPermissions, BlobServiceClient, ContainerClient, ContainerSASPermissions,
  BlobClient, StorageSharedKeyCredential,
} from "@azure/storage-blob";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";

const conn = process.argv[2];
const noRetry = { retryOptions: { maxTries: 1 } };
const service = BlobServiceClient.fromConnectionString(conn, noRetry);
const credential = service.credential;
assert.ok(credential instanceof StorageSharedKeyCredential, "the connection string carries the account key");
const tag = Date.now().toString(36);
const md5 = (b) => createHash("md5").update(b).digest();
const collect = async (iterable) => { const out = []; for await (const x of iterable) out.push(x); return out; };

// refused checks that promise fails with status and, when given, Azure's error code.
async function refused(promise, status, code) {
  try {
    await promise;
  } catch (err) {
    assert.equal(err.statusCode, status, `${err.message} (want ${status} ${code ?? ""})`);
    if (code) assert.equal(err.code ?? err.details?.errorCode, code, err.message);
    return err;
  }
  assert.fail(`succeeded, want ${status} ${code ?? ""}`);
}

// Account information and service properties.
const account = await service.getAccountInfo();
assert.equal(account.accountKind, "StorageV2");
const props = await service.getProperties();
assert.ok(props.cors !== undefined || props.hourMetrics !== undefined);

// ---- Containers: create with metadata and public access, properties, metadata, ACL, leases, list.
const cname = `js-${tag}`;
const container = service.getContainerClient(cname);
await container.create({ metadata: { purpose: "smoke" } });
await refused(container.create(), 409, "ContainerAlreadyExists");
assert.equal((await container.createIfNotExists()).succeeded, false);
let cprops = await container.getProperties();
assert.deepEqual(cprops.metadata, { purpose: "smoke" });
assert.equal(cprops.leaseState, "available");
await container.setMetadata({ a: "1", b: "2" });
assert.deepEqual((await container.getProperties()).metadata, { a: "1", b: "2" });
const start = new Date(Date.now() - 60_000), expiry = new Date(Date.now() + 3600_000);
await container.setAccessPolicy("container", [
  { id: "readers", accessPolicy: { permissions: "rl", startsOn: start, expiresOn: expiry } },
]);
const acl = await container.getAccessPolicy();
assert.equal(acl.blobPublicAccess, "container");
assert.equal(acl.signedIdentifiers.length, 1);
assert.equal(acl.signedIdentifiers[0].id, "readers");
assert.equal(acl.signedIdentifiers[0].accessPolicy.permissions, "rl");
await container.setAccessPolicy(); // private again, no policies
assert.equal((await container.getAccessPolicy()).blobPublicAccess, undefined);

const clease = container.getBlobLeaseClient();
await clease.acquireLease(-1);
cprops = await container.getProperties();
assert.deepEqual([cprops.leaseState, cprops.leaseStatus, cprops.leaseDuration], ["leased", "locked", "infinite"]);
await refused(container.delete(), 412, "LeaseIdMissing");
const other = "6a2b0f3c-1d2e-4f50-8a6b-7c8d9e0f1a2b";
await clease.changeLease(other);
assert.equal(clease.leaseId, other);
await clease.breakLease(0);
assert.equal((await container.getProperties()).leaseState, "broken");
await clease.acquireLease(15);
await clease.renewLease();
await clease.releaseLease();
assert.equal((await container.getProperties()).leaseState, "available");

const names = [];
for (let i = 0; i < 3; i++) {
  const n = `js-${tag}-list-${i}`;
  names.push(n);
  await service.getContainerClient(n).create({ metadata: { i: String(i) } });
}
const pages = [];
for await (const page of service.listContainers({ prefix: `js-${tag}-list-`, includeMetadata: true }).byPage({ maxPageSize: 2 })) {
  pages.push(page.containerItems.map((c) => [c.name, c.metadata.i]));
}
assert.deepEqual(pages, [[[names[0], "0"], [names[1], "1"]], [[names[2], "2"]]]);
for (const n of names) await service.deleteContainer(n);

// Quotes and apostrophes reach the JS SDK's XML reader as themselves (it decodes the five
// named entities, not character references), in names, metadata and error messages alike;
// and an empty stored policy reads back as none, as Azure answers.
const quoted = `it's "quoted" & <bracketed>`;
await container.getBlockBlobClient(quoted).upload("q", 1, { metadata: { note: `say "hi", it's late` } });
const listedQuoted = (await collect(container.listBlobsFlat({ prefix: "it's", includeMetadata: true })))[0];
assert.equal(listedQuoted.name, quoted);
assert.deepEqual(listedQuoted.metadata, { note: `say "hi", it's late` });
await container.getBlockBlobClient(quoted).delete();
await container.getBlockBlobClient("missing").getProperties().catch(() => {});
await container.getBlockBlobClient("missing").download().then(
  () => assert.fail("downloaded a missing blob"),
  (err) => assert.match(err.message, /^The specified blob does not exist\.\nRequestId:/, err.message),
);
await container.setAccessPolicy(undefined, [{ id: "blank", accessPolicy: {} }]);
assert.deepEqual((await container.getAccessPolicy()).signedIdentifiers.map((s) => [s.id, s.accessPolicy]), [["blank", undefined]]);
await container.setAccessPolicy();

// ---- Block blobs: single-shot upload, parallel staged upload, explicit block lists.
const small = container.getBlockBlobClient("dir/small.txt");
const up = await small.upload("hello world", 11, {
  blobHTTPHeaders: { blobContentType: "text/plain", blobCacheControl: "no-cache" },
  metadata: { m1: "v1" },
});
assert.equal(Buffer.from(up.contentMD5).toString("base64"), md5("hello world").toString("base64"));
assert.equal((await small.downloadToBuffer()).toString(), "hello world");

const big = randomBytes(3 * 1024 * 1024 + 123);
const staged = container.getBlockBlobClient("dir/big.bin");
await staged.uploadData(big, { blockSize: 256 * 1024, concurrency: 8, maxSingleShotSize: 64 * 1024 });
const bl = await staged.getBlockList("committed");
assert.equal(bl.committedBlocks.length, 13);
assert.equal(bl.blobContentLength, big.length);
assert.ok((await staged.downloadToBuffer(0, undefined, { concurrency: 4, blockSize: 512 * 1024 })).equals(big));

const listed = container.getBlockBlobClient("dir/blocks.bin");
const id = (i) => Buffer.from(`block-${String(i).padStart(4, "0")}`).toString("base64");
await Promise.all([0, 1, 2].map((i) => listed.stageBlock(id(i), Buffer.from(`<${i}>`), 3)));
let all = await listed.getBlockList("all");
assert.equal(all.uncommittedBlocks.length, 3);
await refused(listed.getProperties(), 404, "BlobNotFound"); // only uncommitted blocks
await listed.commitBlockList([id(2), id(0)], { metadata: { order: "2,0" } });
assert.equal((await listed.downloadToBuffer()).toString(), "<2><0>");
await listed.stageBlock(id(3), Buffer.from("<3>"), 3);
await listed.commitBlockList([id(0), id(3), id(2)]); // committed blocks again, and a new one
assert.equal((await listed.downloadToBuffer()).toString(), "<0><3><2>");
all = await listed.getBlockList("all");
assert.deepEqual(all.committedBlocks.map((b) => b.name), [id(0), id(3), id(2)]);
assert.equal(all.uncommittedBlocks.length, 0);
await refused(listed.commitBlockList([id(9)]), 400, "InvalidBlockList");

// ---- Ranges, range checksums and 416.
const ranged = await staged.download(1000, 5000, { rangeGetContentMD5: true });
const rangeBytes = Buffer.concat(await collect(ranged.readableStreamBody));
assert.ok(rangeBytes.equals(big.subarray(1000, 6000)));
assert.equal(ranged.contentRange, `bytes 1000-5999/${big.length}`);
assert.equal(Buffer.from(ranged.contentMD5).toString("base64"), md5(big.subarray(1000, 6000)).toString("base64"));
const tail = await staged.downloadToBuffer(big.length - 10);
assert.ok(tail.equals(big.subarray(big.length - 10)));
await refused(staged.download(big.length + 1, 10), 416, "InvalidRange");

// ---- Properties and metadata.
let p = await small.getProperties();
assert.deepEqual([p.contentType, p.cacheControl, p.contentLength, p.blobType], ["text/plain", "no-cache", 11, "BlockBlob"]);
assert.deepEqual(p.metadata, { m1: "v1" });
assert.equal(p.accessTier, "Hot");
await small.setHTTPHeaders({ blobContentType: "application/json", blobContentLanguage: "en" });
await small.setMetadata({ m2: "v2", M3: "v3" });
p = await small.getProperties();
assert.deepEqual([p.contentType, p.contentLanguage, p.cacheControl], ["application/json", "en", undefined]);
assert.deepEqual(p.metadata, { m2: "v2", m3: "v3" }); // Node lower-cases header names
await small.setAccessTier("Cool");
assert.equal((await small.getProperties()).accessTier, "Cool");

// ---- Conditional requests.
const etag = (await small.getProperties()).etag;
await refused(small.setMetadata({}, { conditions: { ifMatch: '"0x8D0000000000000"' } }), 412, "ConditionNotMet");
await small.setMetadata({ kept: "yes" }, { conditions: { ifMatch: etag } });
await refused(small.download(0, undefined, { conditions: { ifNoneMatch: (await small.getProperties()).etag } }), 304);
await refused(small.upload("x", 1, { conditions: { ifNoneMatch: "*" } }), 409, "BlobAlreadyExists");
const later = new Date(Date.now() + 3600_000);
await refused(small.download(0, undefined, { conditions: { ifModifiedSince: later } }), 304);
await refused(small.setMetadata({}, { conditions: { ifUnmodifiedSince: new Date(Date.now() - 86400_000) } }), 412, "ConditionNotMet");
assert.equal((await small.exists()), true);
assert.equal((await container.getBlobClient("nothing-here").exists()), false);

// ---- Snapshots, and deleting with and without them.
const snap = await small.createSnapshot({ metadata: { snap: "1" } });
await small.upload("changed", 7);
const snapClient = small.withSnapshot(snap.snapshot);
assert.equal((await snapClient.downloadToBuffer()).toString(), "hello world");
assert.deepEqual((await snapClient.getProperties()).metadata, { snap: "1" });
await refused(snapClient.setMetadata({ x: "y" }), 400, "InvalidOperation");
const flat = [];
for await (const b of container.listBlobsFlat({ prefix: "dir/small", includeSnapshots: true })) flat.push([b.name, b.snapshot ?? ""]);
assert.deepEqual(flat, [["dir/small.txt", snap.snapshot], ["dir/small.txt", ""]]);
await refused(small.delete(), 409, "SnapshotsPresent");
await small.delete({ deleteSnapshots: "only" });
assert.equal(await snapClient.exists(), false);
await small.createSnapshot();
await small.delete({ deleteSnapshots: "include" });
assert.equal(await small.exists(), false);

// ---- Blob leases: the Functions host's pattern and the lease checks of writes.
const locked = container.getBlockBlobClient("locks/host");
await locked.upload("", 0);
const hostA = locked.getBlobLeaseClient("000000000000000000000000a1b2c3d4");
const hostB = locked.getBlobLeaseClient("000000000000000000000000b1b2c3d4");
const acq = await hostA.acquireLease(15);
assert.equal(acq.leaseId, "000000000000000000000000a1b2c3d4");
await refused(hostB.acquireLease(15), 409, "LeaseAlreadyPresent");
await refused(locked.setMetadata({ owner: "x" }), 412, "LeaseIdMissing");
await locked.setMetadata({ owner: "a" }, { conditions: { leaseId: hostA.leaseId } });
await refused(locked.setMetadata({ owner: "b" }, { conditions: { leaseId: hostB.leaseId } }), 412, "LeaseIdMismatchWithBlobOperation");
await hostA.renewLease();
let lp = await locked.getProperties();
assert.deepEqual([lp.leaseState, lp.leaseStatus, lp.leaseDuration], ["leased", "locked", "fixed"]);
const broke = await hostB.breakLease(10);
assert.ok(broke.leaseTime > 0 && broke.leaseTime <= 10);
assert.equal((await locked.getProperties()).leaseState, "breaking");
await refused(hostA.renewLease(), 409, "LeaseIsBrokenAndCannotBeRenewed");
await hostA.breakLease(0);
await hostB.acquireLease(-1);
await hostB.releaseLease();
assert.equal((await locked.getProperties()).leaseState, "available");

// ---- Append blobs, with the append-position and max-size conditions.
const log = container.getAppendBlobClient("logs/app.log");
await log.create({ metadata: { kind: "log" } });
const a1 = await log.appendBlock("line 1\n", 7);
assert.equal(a1.blobAppendOffset, "0");
await log.appendBlock("line 2\n", 7, { conditions: { appendPosition: 7 } });
await refused(log.appendBlock("x", 1, { conditions: { appendPosition: 3 } }), 412, "AppendPositionConditionNotMet");
await refused(log.appendBlock("x", 1, { conditions: { maxSize: 14 } }), 412, "MaxBlobSizeConditionNotMet");
assert.equal((await log.downloadToBuffer()).toString(), "line 1\nline 2\n");
assert.equal((await log.getProperties()).blobCommittedBlockCount, 2);
await log.seal();
await refused(log.appendBlock("x", 1), 409, "BlobIsSealed");
await refused(container.getBlockBlobClient("logs/app.log").stageBlock(id(0), "x", 1), 409, "InvalidBlobType");

// ---- Page blobs: writes, clears, ranges (paged), resize, sequence numbers, diffs.
const disk = container.getPageBlobClient("disks/d.vhd");
await disk.create(8 * 512, { blobSequenceNumber: 5 });
await disk.uploadPages(Buffer.alloc(1024, 1), 0, 1024);
await disk.uploadPages(Buffer.alloc(512, 2), 2048, 512);
await disk.uploadPages(Buffer.alloc(512, 3), 3072, 512);
const ranges = await disk.getPageRanges();
// The SDK reports each range as { offset: start, count: end - start }.
assert.deepEqual(ranges.pageRange.map((r) => [r.offset, r.offset + r.count]), [[0, 1023], [2048, 2559], [3072, 3583]]);
const rangePages = [];
for await (const page of disk.listPageRanges().byPage({ maxPageSize: 2 })) {
  rangePages.push((page.pageRange ?? []).map((r) => [r.start, r.end]));
}
assert.deepEqual(rangePages, [[[0, 1023], [2048, 2559]], [[3072, 3583]]]);
const diskSnap = await disk.createSnapshot();
await disk.clearPages(0, 512);
await disk.uploadPages(Buffer.alloc(512, 4), 1536, 512);
const diff = await disk.getPageRangesDiff(0, 4096, diskSnap.snapshot);
assert.deepEqual(diff.clearRange.map((r) => [r.offset, r.offset + r.count]), [[0, 511]]);
assert.deepEqual(diff.pageRange.map((r) => [r.offset, r.offset + r.count]), [[1536, 2047]]);
const diffPages = [];
for await (const page of disk.listPageRangesDiff(0, 4096, diskSnap.snapshot).byPage({ maxPageSize: 1 })) {
  diffPages.push([...(page.clearRange ?? []).map((r) => ["clear", r.start]), ...(page.pageRange ?? []).map((r) => ["page", r.start])]);
}
assert.deepEqual(diffPages, [[["clear", 0]], [["page", 1536]]]);
const diskBytes = await disk.downloadToBuffer();
assert.equal(diskBytes.length, 4096);
assert.deepEqual([diskBytes[0], diskBytes[600], diskBytes[1600], diskBytes[2100], diskBytes[2600]], [0, 1, 4, 2, 0]);
await disk.resize(2048);
assert.equal((await disk.getProperties()).contentLength, 2048);
await disk.updateSequenceNumber("increment");
assert.equal((await disk.getProperties()).blobSequenceNumber, 6);
await refused(disk.uploadPages(Buffer.alloc(512), 0, 512, { conditions: { ifSequenceNumberLessThan: 6 } }), 412, "SequenceNumberConditionNotMet");
await refused(disk.uploadPages(Buffer.alloc(100), 0, 100), 400);

// ---- Copies within the account: async copy, sync copy, Put Blob / Put Block / Append Block /
// Put Page from URL.
const source = container.getBlockBlobClient("copy/source.bin");
const sourceBytes = randomBytes(4096);
await source.upload(sourceBytes, sourceBytes.length, { metadata: { origin: "source" } });
const copied = container.getBlobClient("copy/async.bin");
const poller = await copied.beginCopyFromURL(source.url);
const copyResult = await poller.pollUntilDone();
assert.equal(copyResult.copyStatus, "success");
const cp = await copied.getProperties();
assert.equal(cp.copyStatus, "success");
assert.equal(cp.copySource, source.url);
assert.deepEqual(cp.metadata, { origin: "source" });
assert.ok((await copied.downloadToBuffer()).equals(sourceBytes));
const sourceSas = await source.generateSasUrl({ permissions: BlobSASPermissions.parse("r"), expiresOn: expiry });
const syncCopy = container.getBlobClient("copy/sync.bin");
const sc = await syncCopy.syncCopyFromURL(sourceSas);
assert.equal(sc.copyStatus, "success");
assert.ok((await syncCopy.downloadToBuffer()).equals(sourceBytes));
const fromUrl = container.getBlockBlobClient("copy/fromurl.bin");
await fromUrl.syncUploadFromURL(sourceSas);
assert.ok((await fromUrl.downloadToBuffer()).equals(sourceBytes));
const blockFromUrl = container.getBlockBlobClient("copy/blockfromurl.bin");
await blockFromUrl.stageBlockFromURL(id(0), sourceSas, 100, 200);
await blockFromUrl.commitBlockList([id(0)]);
assert.ok((await blockFromUrl.downloadToBuffer()).equals(sourceBytes.subarray(100, 300)));
const appendFromUrl = container.getAppendBlobClient("copy/append.bin");
await appendFromUrl.create();
await appendFromUrl.appendBlockFromURL(sourceSas, 0, 1000);
assert.ok((await appendFromUrl.downloadToBuffer()).equals(sourceBytes.subarray(0, 1000)));
const pageFromUrl = container.getPageBlobClient("copy/page.bin");
await pageFromUrl.create(4096);
await pageFromUrl.uploadPagesFromURL(sourceSas, 512, 1024, 1024);
const pb = await pageFromUrl.downloadToBuffer();
assert.ok(pb.subarray(1024, 2048).equals(sourceBytes.subarray(512, 1536)));
await refused(container.getBlobClient("copy/missing.bin").beginCopyFromURL(container.getBlobClient("nope").url), 404);

// ---- SAS: a container SAS that lists and reads, a blob SAS that writes one blob only.
const csasUrl = await container.generateSasUrl({ permissions: ContainerSASPermissions.parse("rl"), expiresOn: expiry });
const viaSas = new ContainerClient(csasUrl, new AnonymousCredential(), noRetry);
const sasNames = [];
for await (const b of viaSas.listBlobsFlat({ prefix: "copy/" })) sasNames.push(b.name);
assert.ok(sasNames.includes("copy/source.bin"));
assert.ok((await viaSas.getBlobClient("copy/source.bin").downloadToBuffer()).equals(sourceBytes));
await refused(viaSas.getBlockBlobClient("copy/new.bin").upload("x", 1), 403, "AuthorizationPermissionMismatch");
const wsasUrl = await container.getBlockBlobClient("sas/written.txt").generateSasUrl({ permissions: BlobSASPermissions.parse("cw"), expiresOn: expiry });
await new BlobClient(wsasUrl, new AnonymousCredential(), noRetry).getBlockBlobClient().upload("by sas", 6);
assert.equal((await container.getBlobClient("sas/written.txt").downloadToBuffer()).toString(), "by sas");
await refused(new BlobClient(wsasUrl, new AnonymousCredential(), noRetry).download(), 403, "AuthorizationPermissionMismatch");
// A stored access policy supplies the permissions and expiry.
await container.setAccessPolicy(undefined, [{ id: "ro", accessPolicy: { permissions: "r", expiresOn: expiry } }]);
const policySas = await container.generateSasUrl({ identifier: "ro" });
const viaPolicy = new ContainerClient(policySas, new AnonymousCredential(), noRetry);
assert.ok((await viaPolicy.getBlobClient("copy/source.bin").downloadToBuffer()).equals(sourceBytes));
await refused(viaPolicy.getBlockBlobClient("copy/x.bin").upload("x", 1), 403);

// ---- Anonymous public read.
const anonymous = new ContainerClient(container.url, new AnonymousCredential(), noRetry);
await refused(anonymous.getBlobClient("copy/source.bin").download(), 401, "NoAuthenticationInformation");
await container.setAccessPolicy("blob");
assert.ok((await anonymous.getBlobClient("copy/source.bin").downloadToBuffer()).equals(sourceBytes));
await refused(collect(anonymous.listBlobsFlat()), 401, "NoAuthenticationInformation");
await container.setAccessPolicy("container");
const anonNames = [];
for await (const b of anonymous.listBlobsFlat({ prefix: "copy/" })) anonNames.push(b.name);
assert.ok(anonNames.length >= 5);
await refused(anonymous.getBlockBlobClient("copy/anon.bin").upload("x", 1), 401, "NoAuthenticationInformation");
await container.setAccessPolicy();

// ---- Hierarchical listing.
const tree = [];
for await (const item of container.listBlobsByHierarchy("/", { prefix: "copy/" })) tree.push(item.kind + ":" + item.name);
assert.ok(tree.includes("blob:copy/source.bin"));
const top = [];
for await (const item of container.listBlobsByHierarchy("/")) top.push(item.kind + ":" + item.name);
assert.deepEqual(top.filter((n) => n.startsWith("prefix:")), ["prefix:copy/", "prefix:dir/", "prefix:disks/", "prefix:locks/", "prefix:logs/", "prefix:sas/"]);

// ---- Blob index tags: set and read, Find Blobs by Tags (account and container), x-ms-if-tags.
const tagged = container.getBlockBlobClient("tags/a.txt");
await tagged.upload("a", 1, { tags: { project: "tabula", stage: "draft" } });
await container.getBlockBlobClient("tags/b.txt").upload("b", 1, { tags: { project: "tabula", stage: "final" } });
assert.deepEqual((await tagged.getTags()).tags, { project: "tabula", stage: "draft" });
assert.equal((await tagged.getProperties()).tagCount, 2);
const found = [];
for await (const b of service.findBlobsByTags(`"project" = 'tabula' AND @container = '${cname}'`)) found.push([b.name, b.tags]);
assert.deepEqual(found, [["tags/a.txt", { project: "tabula" }], ["tags/b.txt", { project: "tabula" }]]);
const foundPages = [];
for await (const page of container.findBlobsByTags(`"stage" >= 'd'`).byPage({ maxPageSize: 1 })) foundPages.push(page.blobs.map((b) => b.name));
assert.deepEqual(foundPages, [["tags/a.txt"], ["tags/b.txt"]]);
await refused(tagged.setMetadata({ x: "1" }, { conditions: { tagConditions: `"stage" = 'final'` } }), 412, "ConditionNotMet");
await tagged.setMetadata({ x: "1" }, { conditions: { tagConditions: `"stage" = 'final' OR "project" = 'tabula'` } });
await tagged.setTags({ project: "tabula", stage: "final" }, { conditions: { tagConditions: `"stage" <> 'final'` } });
await refused(tagged.download(0, undefined, { conditions: { tagConditions: `"stage" = 'draft'` } }), 412, "ConditionNotMet");

// ---- Soft delete: deleted and overwritten blobs kept, listed with includeDeleted, undeleted.
await service.setProperties({ deleteRetentionPolicy: { enabled: true, days: 3 } });
const retention = (await service.getProperties()).deleteRetentionPolicy;
assert.deepEqual([retention.enabled, retention.days], [true, 3]);
const soft = container.getBlockBlobClient("soft/doc.txt");
await soft.upload("one", 3);
await soft.upload("two", 3); // "one" becomes a soft-deleted snapshot
await soft.delete();
assert.equal(await soft.exists(), false);
const softListed = [];
for await (const b of container.listBlobsFlat({ prefix: "soft/", includeDeleted: true, includeSnapshots: true })) {
  softListed.push([b.name, b.deleted, b.snapshot ? "snapshot" : "base", b.properties.remainingRetentionDays]);
}
assert.deepEqual(softListed, [["soft/doc.txt", true, "snapshot", 2], ["soft/doc.txt", true, "base", 2]]);
await soft.undelete();
assert.equal((await soft.downloadToBuffer()).toString(), "two");
const restored = [];
for await (const b of container.listBlobsFlat({ prefix: "soft/", includeSnapshots: true })) restored.push(b.snapshot ? "snapshot" : "base");
assert.deepEqual(restored, ["snapshot", "base"]);
await service.setProperties({ deleteRetentionPolicy: { enabled: false } });

// ---- The root container, and names XML cannot carry.
const root = service.getContainerClient("$root");
await root.createIfNotExists();
await root.getBlockBlobClient(`js-${tag}.txt`).upload("root", 4);
assert.equal((await root.getBlobClient(`js-${tag}.txt`).downloadToBuffer()).toString(), "root");
await root.getBlobClient(`js-${tag}.txt`).delete();
const odd = "odd/name\uffff with space.txt";
await container.getBlockBlobClient(odd).upload("odd", 3);
const oddNames = [];
for await (const b of container.listBlobsFlat({ prefix: "odd/" })) oddNames.push(b.name);
assert.deepEqual(oddNames, [odd]);
const oddTree = [];
for await (const item of container.listBlobsByHierarchy("/", { prefix: "odd/" })) oddTree.push(item.name);
assert.deepEqual(oddTree, [odd]);

// ---- Blob Batch: the account's batch client (which, in path style, the SDK sends as a
// container batch without a container), deletes that succeed and one that fails alone; then a
// container's batch of Set Blob Tier.
const batched = ["batch/one", "batch/two with space", "batch/three"].map((n) => container.getBlockBlobClient(n));
for (const b of batched) await b.upload("b", 1);
await batched[0].createSnapshot();
const deleted = await service.getBlobBatchClient().deleteBlobs(
  [batched[0], batched[1], container.getBlobClient("batch/missing")], { deleteSnapshots: "include" });
assert.equal(deleted._response.status, 202);
assert.equal(deleted.subResponsesSucceededCount, 2);
assert.equal(deleted.subResponsesFailedCount, 1);
assert.deepEqual(deleted.subResponses.map((r) => [r.status, r.errorCode]),
  [[202, undefined], [202, undefined], [404, "BlobNotFound"]]);
assert.deepEqual((await collect(container.listBlobsFlat({ prefix: "batch/", includeSnapshots: true }))).map((b) => b.name),
  ["batch/three"]);
const tiered = await container.getBlobBatchClient().setBlobsAccessTier([batched[2]], "Cool");
assert.deepEqual(tiered.subResponses.map((r) => r.status), [200]);
assert.equal((await batched[2].getProperties()).accessTier, "Cool");

await container.delete();
await refused(container.getProperties(), 404, "ContainerNotFound");
console.log("js blob sdk smoke: ok");
