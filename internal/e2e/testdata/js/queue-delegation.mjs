// A user delegation SAS for a queue, as @azure/storage-queue makes one: a bearer token's holder
// gets a user delegation key from the Queue service, signs a queue SAS with it, and a client
// holding only that SAS sends and peeks messages and is refused what the SAS does not allow.
// Usage: TABULA_BEARER_TOKEN=<token> node queue-delegation.mjs <queue service URL>, with
// NODE_EXTRA_CA_CERTS trusting the server's certificate. Exits non-zero on the first mismatch.
import { QueueServiceClient, QueueClient, QueueSASPermissions, generateQueueSASQueryParameters } from "@azure/storage-queue";
import assert from "node:assert/strict";

const serviceURL = process.argv[2];
const token = process.env.TABULA_BEARER_TOKEN;
const opts = { retryOptions: { maxTries: 1 } };
const credential = { getToken: async () => ({ token, expiresOnTimestamp: Date.now() + 3600_000 }) };
const service = new QueueServiceClient(serviceURL, credential, opts);

const name = "udq" + Date.now();
await service.getQueueClient(name).create();

const now = new Date();
const key = await service.getUserDelegationKey(new Date(now.getTime() - 60_000), new Date(now.getTime() + 3600_000));
assert.equal(key.signedService, "q");
assert.ok(key.value.length > 0);

const sas = generateQueueSASQueryParameters(
  { queueName: name, permissions: QueueSASPermissions.parse("ra"), expiresOn: new Date(now.getTime() + 3600_000) },
  key,
  "devstoreaccount1",
).toString();
assert.ok(sas.includes("skoid="), sas);

const holder = new QueueClient(`${serviceURL}/${name}?${sas}`, undefined, opts);
await holder.sendMessage("hello");
const peeked = await holder.peekMessages();
assert.equal(peeked.peekedMessageItems[0].messageText, "hello");
// r and a only: receiving (p) is refused.
await holder.receiveMessages().then(
  () => assert.fail("receiving with an ra SAS succeeded"),
  (err) => assert.equal(err.statusCode, 403, err.message),
);
// Another queue is out of its reach.
await service.getQueueClient(name + "x").create();
const elsewhere = new QueueClient(`${serviceURL}/${name}x?${sas}`, undefined, opts);
await elsewhere.sendMessage("nope").then(
  () => assert.fail("the SAS reached another queue"),
  (err) => assert.equal(err.statusCode, 403, err.message),
);
console.log("js queue delegation: ok");
