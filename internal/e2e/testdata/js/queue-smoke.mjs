// Drives Tabula's queue endpoint through the official JS SDK (@azure/storage-queue), every
// operation: its own SharedKey signer, SAS generator, XML reader and connection-string parser
// (UseDevelopmentStorage=true included).
// Usage: node queue-smoke.mjs <connection string>. Exits non-zero on the first mismatch.
import { QueueServiceClient, QueueClient, QueueSASPermissions, AccountSASPermissions, AccountSASResourceTypes, AccountSASServices } from "@azure/storage-queue";
import assert from "node:assert/strict";

const conn = process.argv[2];
const opts = { retryOptions: { maxTries: 1 } };
const service = QueueServiceClient.fromConnectionString(conn, opts);
const prefix = "jsq" + Date.now();

const rejects = async (promise, status, code) => {
  await promise.then(
    () => assert.fail(`expected ${status} ${code}`),
    (err) => {
      assert.equal(err.statusCode, status, err.message);
      assert.equal(err.code, code, err.message);
    },
  );
};

// Service properties: CORS kept and returned.
const props = await service.getProperties();
props.cors = [{ allowedOrigins: "https://example.com", allowedMethods: "GET,PUT", allowedHeaders: "x-ms-meta-*", exposedHeaders: "x-ms-*", maxAgeInSeconds: 60 }];
await service.setProperties(props);
const again = await service.getProperties();
assert.equal(again.cors.length, 1);
assert.equal(again.cors[0].allowedOrigins, "https://example.com");
// Stats come from the secondary endpoint only, as on Azure.
await rejects(service.getStatistics(), 400, "InvalidQueryParameterValue");
const secondaryURL = service.url.replace(/\/devstoreaccount1\/?$/, "/devstoreaccount1-secondary");
const secondary = new QueueServiceClient(secondaryURL, service.credential, opts);
assert.equal((await secondary.getStatistics()).geoReplication.status, "live");

// Queues: create (with metadata; again is fine with the same), list, properties, metadata.
const name = prefix + "-work";
const queue = service.getQueueClient(name);
await queue.create({ metadata: { team: "ops", tier: "1" } });
await queue.create({ metadata: { team: "ops", tier: "1" } });
await rejects(queue.create({ metadata: { team: "dev" } }), 409, "QueueAlreadyExists");
assert.equal((await queue.createIfNotExists()).succeeded, false);
for (const n of ["-a", "-b", "-c"]) await service.createQueue(prefix + n);
const listed = [];
let pages = 0;
for await (const page of service.listQueues({ prefix, includeMetadata: true }).byPage({ maxPageSize: 2 })) {
  pages++;
  for (const q of page.queueItems) listed.push(q.name);
  const work = page.queueItems.find((q) => q.name === name);
  if (work) assert.deepEqual(work.metadata, { team: "ops", tier: "1" });
}
assert.deepEqual(listed, [prefix + "-a", prefix + "-b", prefix + "-c", name]);
assert.equal(pages, 2);
let qp = await queue.getProperties();
assert.equal(qp.approximateMessagesCount, 0);
assert.deepEqual(qp.metadata, { team: "ops", tier: "1" });
await queue.setMetadata({ stage: "two" });
assert.deepEqual((await queue.getProperties()).metadata, { stage: "two" });
assert.equal(await queue.exists(), true);
assert.equal(await service.getQueueClient(prefix + "-none").exists(), false);

// ACL.
const start = new Date("2030-01-02T03:04:05Z");
await queue.setAccessPolicy([{ id: "readers", accessPolicy: { startsOn: start, expiresOn: new Date(start.getTime() + 3600e3), permissions: "rp" } }]);
const acl = await queue.getAccessPolicy();
assert.equal(acl.signedIdentifiers.length, 1);
assert.equal(acl.signedIdentifiers[0].id, "readers");
assert.equal(acl.signedIdentifiers[0].accessPolicy.permissions, "rp");
assert.equal(acl.signedIdentifiers[0].accessPolicy.startsOn.toISOString(), start.toISOString());

// Messages: send, peek, receive, update, delete, with text that needs escaping.
// (No line ends: this SDK's XML writer drops them before they leave the client.)
const text = "héllo <wörld> & \"friends\" 'quoted' line two\t漢字 𝄞 ]]>";
const sent = await queue.sendMessage(text, { messageTimeToLive: 3600, visibilityTimeout: 0 });
assert.ok(sent.messageId && sent.popReceipt);
assert.equal(sent.expiresOn.getTime() - sent.insertedOn.getTime(), 3600e3);
await queue.sendMessage("second");
await queue.sendMessage("never expires", { messageTimeToLive: -1, visibilityTimeout: 3600 });
assert.equal((await queue.sendMessage("forever", { messageTimeToLive: -1 })).expiresOn.toISOString(), "9999-12-31T23:59:59.000Z");
const peeked = await queue.peekMessages({ numberOfMessages: 32 });
assert.equal(peeked.peekedMessageItems.length, 3);
assert.equal(peeked.peekedMessageItems[0].messageText, text);
assert.equal(peeked.peekedMessageItems[0].dequeueCount, 0);
assert.deepEqual(peeked.peekedMessageItems[0].insertedOn, sent.insertedOn);
assert.deepEqual(peeked.peekedMessageItems[0].expiresOn, sent.expiresOn);
assert.equal((await queue.getProperties()).approximateMessagesCount, 4);

const received = await queue.receiveMessages({ numberOfMessages: 2, visibilityTimeout: 60 });
assert.equal(received.receivedMessageItems.length, 2);
const [first, second] = received.receivedMessageItems;
assert.equal(first.messageText, text);
assert.equal(first.dequeueCount, 1);
assert.equal(first.messageId, sent.messageId);
assert.equal((await queue.receiveMessages({ numberOfMessages: 32 })).receivedMessageItems.length, 1); // "forever"

const updated = await queue.updateMessage(first.messageId, first.popReceipt, "changed", 0);
assert.ok(updated.popReceipt && updated.popReceipt !== first.popReceipt);
assert.ok(updated.nextVisibleOn instanceof Date);
await rejects(queue.deleteMessage(first.messageId, first.popReceipt), 404, "MessageNotFound");
const back = await queue.receiveMessages();
assert.equal(back.receivedMessageItems[0].messageText, "changed");
assert.equal(back.receivedMessageItems[0].dequeueCount, 2);
await queue.deleteMessage(back.receivedMessageItems[0].messageId, back.receivedMessageItems[0].popReceipt);
await queue.deleteMessage(second.messageId, second.popReceipt);
// A visibility-only update (no text) keeps the text.
await queue.sendMessage("keep");
const keep = (await queue.receiveMessages()).receivedMessageItems[0];
await queue.updateMessage(keep.messageId, keep.popReceipt, undefined, 0);
const kept = (await queue.receiveMessages()).receivedMessageItems[0];
assert.equal(kept.messageText, "keep");
await queue.deleteMessage(kept.messageId, kept.popReceipt);

// The SDK's own 64 KiB test: 65,536 UTF-8 bytes whose XML escapes make the body longer are
// fine; one byte more is 413 RequestBodyTooLarge.
const special = "!@#$%^&*()_+`-=[]|};'\":,./?><`~漢字㒈保ᨍ揫^p[뷁)׷񬓔7񈺝l鮍򧽶ͺ簣ڞ츊䈗㝯綞߫⯹?ÎᦡC";
const big = Buffer.alloc(64 * 1024).fill("a");
big.write(special, 0);
const bigSent = await queue.sendMessage(big.toString());
const bigGot = await queue.receiveMessages();
assert.equal(bigGot.receivedMessageItems[0].messageText, big.toString());
await queue.deleteMessage(bigSent.messageId, bigGot.receivedMessageItems[0].popReceipt);
const tooBig = Buffer.alloc(64 * 1024 + 1).fill("a");
tooBig.write(special, 0);
await rejects(queue.sendMessage(tooBig.toString()), 413, "RequestBodyTooLarge");
await rejects(queue.receiveMessages({ numberOfMessages: 33 }), 400, "OutOfRangeQueryParameterValue");

// A queue SAS (r a u p) made by the SDK.
const sasUrl = await queue.generateSasUrl({ permissions: QueueSASPermissions.parse("raup"), expiresOn: new Date(Date.now() + 3600e3) });
const viaSAS = new QueueClient(sasUrl, undefined, opts);
await viaSAS.sendMessage("from sas");
const sasGot = await viaSAS.receiveMessages();
assert.equal(sasGot.receivedMessageItems[0].messageText, "from sas");
const sasUpd = await viaSAS.updateMessage(sasGot.receivedMessageItems[0].messageId, sasGot.receivedMessageItems[0].popReceipt, "sas changed", 0);
await viaSAS.deleteMessage(sasGot.receivedMessageItems[0].messageId, sasUpd.popReceipt);
await rejects(viaSAS.clearMessages(), 403, "AuthorizationFailure");
const peekOnly = new QueueClient(await queue.generateSasUrl({ permissions: QueueSASPermissions.parse("r"), expiresOn: new Date(Date.now() + 3600e3) }), undefined, opts);
await rejects(peekOnly.sendMessage("x"), 403, "AuthorizationPermissionMismatch");

// An account SAS.
const accountSAS = service.generateAccountSasUrl(new Date(Date.now() + 3600e3), AccountSASPermissions.parse("rlacup"), AccountSASResourceTypes.parse("sco").toString());
const viaAccount = new QueueServiceClient(accountSAS, undefined, opts);
await viaAccount.getQueueClient(name).sendMessage("from account sas");
let count = 0;
for await (const q of viaAccount.listQueues({ prefix })) count++;
assert.equal(count, 4);
void AccountSASServices;

// Clear and delete.
await queue.clearMessages();
assert.equal((await queue.getProperties()).approximateMessagesCount, 0);
assert.equal((await queue.receiveMessages({ numberOfMessages: 32 })).receivedMessageItems.length, 0);
await queue.delete();
await rejects(queue.getProperties(), 404, "QueueNotFound");
await rejects(queue.sendMessage("x"), 404, "QueueNotFound");
for (const n of ["-a", "-b", "-c"]) await service.deleteQueue(prefix + n);
console.log("js queue smoke: ok");
