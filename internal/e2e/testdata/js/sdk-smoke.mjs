// Drives Tabula through the official JS SDK (@azure/data-tables), which signs with SharedKey
// (not SharedKeyLite), builds its own $batch bodies and reads responses its own way.
// Usage: node sdk-smoke.mjs <connection string>. Exits non-zero on the first mismatch.
import { TableServiceClient, TableClient, odata } from "@azure/data-tables";
import assert from "node:assert/strict";

const conn = process.argv[2];
const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const service = TableServiceClient.fromConnectionString(conn, opts);
const name = "jssmoke" + Date.now();
await service.createTable(name);
const tables = [];
for await (const t of service.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } })) tables.push(t.name);
assert.deepEqual(tables, [name]);

const client = TableClient.fromConnectionString(conn, name, opts);
const when = new Date("2024-01-02T03:04:05.678Z");
await client.createEntity({
  partitionKey: "p", rowKey: "O'Brien", str: "héllo", num: 42, dbl: 2.5, flag: true, when,
  big: { value: "9007199254740993", type: "Int64" }, bin: new Uint8Array([1, 2, 255]),
  id: { value: "c9da6455-213d-42c9-9a79-3e9149a57833", type: "Guid" },
});
const e = await client.getEntity("p", "O'Brien");
assert.equal(e.str, "héllo");
assert.equal(e.num, 42);
assert.equal(e.dbl, 2.5);
assert.equal(e.flag, true);
assert.equal(e.when.toISOString(), when.toISOString());
assert.equal(e.big, 9007199254740993n); // the SDK reads Edm.Int64 as a bigint
assert.deepEqual([...e.bin], [1, 2, 255]);
assert.ok(e.etag.startsWith('W/"datetime'));

// Merge keeps unsent properties; replace drops them; a stale ETag is refused.
await client.updateEntity({ partitionKey: "p", rowKey: "O'Brien", extra: 1 }, "Merge");
assert.equal((await client.getEntity("p", "O'Brien")).str, "héllo");
await client.updateEntity({ partitionKey: "p", rowKey: "O'Brien", only: 1 }, "Replace", { etag: e.etag }).then(
  () => assert.fail("a stale ETag was accepted"),
  (err) => assert.equal(err.statusCode, 412),
);
await client.upsertEntity({ partitionKey: "p", rowKey: "O'Brien", only: 1 }, "Replace");
assert.equal((await client.getEntity("p", "O'Brien")).str, undefined);

// A transaction of every kind, then one that fails and applies nothing.
const actions = [];
for (let i = 0; i < 60; i++) actions.push(["create", { partitionKey: "tx", rowKey: String(i).padStart(3, "0"), i }]);
await client.submitTransaction(actions);
await client.submitTransaction([
  ["update", { partitionKey: "tx", rowKey: "000", merged: true }, "Merge"],
  ["upsert", { partitionKey: "tx", rowKey: "100", i: 100 }, "Replace"],
  ["delete", { partitionKey: "tx", rowKey: "001" }],
]);
await client.submitTransaction([
  ["create", { partitionKey: "tx", rowKey: "new" }],
  ["create", { partitionKey: "tx", rowKey: "002" }],
]).then(
  () => assert.fail("a conflicting transaction succeeded"),
  (err) => assert.equal(err.statusCode, 409),
);

// Paging with $top and a filter, following continuations.
let count = 0, pages = 0;
for await (const page of client.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${"tx"} and i ge ${10}` } }).byPage({ maxPageSize: 20 })) {
  pages++;
  count += page.length;
}
assert.equal(count, 51); // 10..59 plus 100
assert.ok(pages >= 3, `only ${pages} pages`);
await client.deleteEntity("p", "O'Brien");
await service.deleteTable(name);
console.log("js sdk smoke: ok");
