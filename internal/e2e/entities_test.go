package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func addEntity(t *testing.T, c *aztables.Client, e any) azcore.ETag {
	t.Helper()
	resp, err := c.AddEntity(context.Background(), marshal(t, e), nil)
	if err != nil {
		t.Fatalf("AddEntity: %v", err)
	}
	return resp.ETag
}

// getProps reads an entity back as a plain map (minimal metadata, with annotations).
func getProps(t *testing.T, c *aztables.Client, pk, rk string) (map[string]any, azcore.ETag) {
	t.Helper()
	resp, err := c.GetEntity(context.Background(), pk, rk, nil)
	if err != nil {
		t.Fatalf("GetEntity(%q,%q): %v", pk, rk, err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		t.Fatal(err)
	}
	return m, resp.ETag
}

func TestEveryEDMTypeRoundTrips(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "types")
		when := time.Date(2023, 4, 5, 6, 7, 8, 123456700, time.UTC)
		in := aztables.EDMEntity{
			Entity: aztables.Entity{PartitionKey: "pk", RowKey: "rk"},
			Properties: map[string]any{
				"Str":  "héllo \"world\"",
				"Bool": true,
				"I32":  int32(-2147483648),
				"I64":  aztables.EDMInt64(math.MaxInt64),
				"Dbl":  3.25,
				"When": aztables.EDMDateTime(when),
				"ID":   aztables.EDMGUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
				"Bin":  aztables.EDMBinary([]byte{0, 1, 2, 0xfe, 0xff}),
			},
		}
		addEntity(t, c, in)
		resp, err := c.GetEntity(context.Background(), "pk", "rk", nil)
		if err != nil {
			t.Fatal(err)
		}
		var out aztables.EDMEntity
		if err := json.Unmarshal(resp.Value, &out); err != nil {
			t.Fatalf("SDK cannot read the entity back: %v\n%s", err, resp.Value)
		}
		if out.PartitionKey != "pk" || out.RowKey != "rk" {
			t.Fatalf("keys = %q,%q", out.PartitionKey, out.RowKey)
		}
		if time.Since(time.Time(out.Timestamp)) > time.Minute {
			t.Fatalf("Timestamp %v is not the server's write time", time.Time(out.Timestamp))
		}
		if string(resp.ETag) == "" {
			t.Fatal("point query returned no ETag")
		}
		want := map[string]any{
			"Str": "héllo \"world\"", "Bool": true, "I32": int32(-2147483648),
			"I64": aztables.EDMInt64(math.MaxInt64), "Dbl": 3.25,
			"When": aztables.EDMDateTime(when), "ID": aztables.EDMGUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
			"Bin": aztables.EDMBinary([]byte{0, 1, 2, 0xfe, 0xff}),
		}
		for name, w := range want {
			got := out.Properties[name]
			if wt, ok := w.(aztables.EDMDateTime); ok {
				if gt, ok := got.(aztables.EDMDateTime); !ok || !time.Time(gt).Equal(time.Time(wt)) {
					t.Errorf("%s = %#v, want %v", name, got, time.Time(wt))
				}
				continue
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("%s = %#v (%T), want %#v (%T)", name, got, got, w, w)
			}
		}
	})
}

func TestInsertOfExistingEntityConflicts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "dupes")
		e := map[string]any{"PartitionKey": "p", "RowKey": "r"}
		addEntity(t, c, e)
		_, err := c.AddEntity(context.Background(), marshal(t, e), nil)
		wantAzureError(t, err, http.StatusConflict, "EntityAlreadyExists")
	})
}

func TestReplaceDropsUnsentPropertiesAndMergeKeepsThem(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "updates")
		addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "merge", "A": 1, "B": "b"})
		addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "replace", "A": 1, "B": "b"})

		if _, err := c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "merge", "A": "now a string", "C": true}),
			&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: to.Ptr(azcore.ETagAny)}); err != nil {
			t.Fatal(err)
		}
		m, _ := getProps(t, c, "p", "merge")
		if m["A"] != "now a string" || m["B"] != "b" || m["C"] != true {
			t.Fatalf("after merge: %v", m)
		}

		if _, err := c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "replace", "C": true}),
			&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: to.Ptr(azcore.ETagAny)}); err != nil {
			t.Fatal(err)
		}
		m, _ = getProps(t, c, "p", "replace")
		if _, has := m["A"]; has || m["C"] != true {
			t.Fatalf("after replace: %v", m)
		}
	})
}

func TestUpdateOfMissingEntityIsNotFound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "missing")
		for _, mode := range []aztables.UpdateMode{aztables.UpdateModeMerge, aztables.UpdateModeReplace} {
			_, err := c.UpdateEntity(context.Background(), marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}),
				&aztables.UpdateEntityOptions{UpdateMode: mode, IfMatch: to.Ptr(azcore.ETagAny)})
			wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
		}
		_, err := c.DeleteEntity(context.Background(), "p", "r", nil)
		wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
	})
}

func TestUpsertCreatesThenReplacesOrMerges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "upserts")
		for _, mode := range []aztables.UpdateMode{aztables.UpdateModeReplace, aztables.UpdateModeMerge} {
			rk := string(mode)
			if _, err := c.UpsertEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "A": 1}), &aztables.UpsertEntityOptions{UpdateMode: mode}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.UpsertEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "B": 2}), &aztables.UpsertEntityOptions{UpdateMode: mode}); err != nil {
				t.Fatal(err)
			}
			m, _ := getProps(t, c, "p", rk)
			_, hasA := m["A"]
			if hasA != (mode == aztables.UpdateModeMerge) || m["B"] != float64(2) {
				t.Fatalf("%s upsert result: %v", mode, m)
			}
		}
	})
}

func TestETagsGuardConcurrentUpdates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "etags")
		first := addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 1})
		_, gotETag := getProps(t, c, "p", "r")
		if gotETag != first {
			t.Fatalf("point query ETag %q differs from insert ETag %q", gotETag, first)
		}
		resp, err := c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 2}),
			&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &first})
		if err != nil {
			t.Fatal(err)
		}
		if resp.ETag == first {
			t.Fatal("update did not change the ETag")
		}
		// The first ETag is now stale, for every conditional operation.
		_, err = c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 3}),
			&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &first})
		wantAzureError(t, err, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied")
		_, err = c.DeleteEntity(ctx, "p", "r", &aztables.DeleteEntityOptions{IfMatch: &first})
		wantAzureError(t, err, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied")
		m, _ := getProps(t, c, "p", "r")
		if m["N"] != float64(2) {
			t.Fatalf("failed conditional writes changed the entity: %v", m)
		}
		if _, err := c.DeleteEntity(ctx, "p", "r", &aztables.DeleteEntityOptions{IfMatch: &resp.ETag}); err != nil {
			t.Fatal(err)
		}
		_, err = c.GetEntity(ctx, "p", "r", nil)
		wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
	})
}

func TestKeysWithAwkwardCharacters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "awkward")
		// The SDK refuses empty keys client-side; the raw HTTP tests cover them.
		keys := []string{"O'Brien", "''", "a b", "comma,paren(x)=y", "ünïcödé ✓", "plus+percent%25", "emoji 😀", "&amp;<>", "tilde~star*"}
		for i, k := range keys {
			e := map[string]any{"PartitionKey": k, "RowKey": k, "I": i}
			addEntity(t, c, e)
			m, _ := getProps(t, c, k, k)
			if m["PartitionKey"] != k || m["RowKey"] != k || m["I"] != float64(i) {
				t.Fatalf("key %q read back as %v", k, m)
			}
			if _, err := c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": k, "RowKey": k, "J": 1}),
				&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: to.Ptr(azcore.ETagAny)}); err != nil {
				t.Fatalf("merge of key %q: %v", k, err)
			}
			if _, err := c.DeleteEntity(ctx, k, k, nil); err != nil {
				t.Fatalf("delete of key %q: %v", k, err)
			}
		}
	})
}

func TestInvalidEntitiesAreRejected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		c := s.newTable(t, "invalid")
		big := make([]byte, 40000)
		for i := range big {
			big[i] = 'x'
		}
		cases := []struct {
			name   string
			entity map[string]any
			code   string
		}{
			{"slash in key", map[string]any{"PartitionKey": "a/b", "RowKey": "r"}, "OutOfRangeInput"},
			{"property name with dash", map[string]any{"PartitionKey": "p", "RowKey": "r", "a-b": 1}, "PropertyNameInvalid"},
			{"string over 32K chars", map[string]any{"PartitionKey": "p", "RowKey": "r", "S": string(big)}, "PropertyValueTooLarge"},
			{"bad guid", map[string]any{"PartitionKey": "p", "RowKey": "r", "G": "nope", "G@odata.type": "Edm.Guid"}, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := c.AddEntity(context.Background(), marshal(t, tc.entity), nil)
				if tc.code == "" {
					var re *azcore.ResponseError
					if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
						t.Fatalf("got %v, want a 400", err)
					}
					return
				}
				wantAzureError(t, err, http.StatusBadRequest, tc.code)
			})
		}
	})
}

// TestIfMatchWithAForeignETagFailsTheCondition sends, through the SDK, If-Match values that are
// well-formed entity tags but not this entity's: every conditional write fails 412, as on Azure
// and the old storage emulator (Azure/Azurite#1229, whose reporter compared them with
// W/"wrong"), and nothing changes. A tag of the service's datetime form is
// UpdateConditionNotSatisfied; any other is ConditionNotMet, as the legacy Go SDK's recordings
// of Update and Merge Entity with a datetime tag whose quotes are doubled show Azure answer. A
// value that is no entity tag at all stays a malformed request (400 InvalidInput,
// Azure/Azurite#1829).
func TestIfMatchWithAForeignETagFailsTheCondition(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "foreignetag")
		current := addEntity(t, c, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 1})
		for _, tc := range []struct {
			etag azcore.ETag
			code string
		}{
			{`W/"wrong"`, "ConditionNotMet"},
			{`"wrong"`, "ConditionNotMet"},
			{`W/""`, "ConditionNotMet"},
			{`W/"datetime'not-a-time'"`, "ConditionNotMet"},
			{`W/"datetime''2017-04-01T01%3A07%3A23.8881885Z''"`, "ConditionNotMet"},
			{`"datetime'2015-01-01T23%3A14%3A33.4980000Z'"`, "UpdateConditionNotSatisfied"},
			{`W/"datetime'2015-01-01T23%3A14%3A33.4980000Z'"`, "UpdateConditionNotSatisfied"},
		} {
			etag := tc.etag
			t.Run(string(etag), func(t *testing.T) {
				_, err := c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 2}),
					&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &etag})
				wantAzureError(t, err, http.StatusPreconditionFailed, tc.code)
				_, err = c.UpdateEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 3}),
					&aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &etag})
				wantAzureError(t, err, http.StatusPreconditionFailed, tc.code)
				_, err = c.DeleteEntity(ctx, "p", "r", &aztables.DeleteEntityOptions{IfMatch: &etag})
				wantAzureError(t, err, http.StatusPreconditionFailed, tc.code)
				// A missing entity is still 404: existence is judged before the condition.
				_, err = c.DeleteEntity(ctx, "p", "absent", &aztables.DeleteEntityOptions{IfMatch: &etag})
				wantAzureError(t, err, http.StatusNotFound, "ResourceNotFound")
			})
		}
		m, etag := getProps(t, c, "p", "r")
		if m["N"] != float64(1) || etag != current {
			t.Fatalf("failed conditional writes changed the entity: %v %s", m, etag)
		}
		malformed := azcore.ETag("MalformedETag")
		_, err := c.DeleteEntity(ctx, "p", "r", &aztables.DeleteEntityOptions{IfMatch: &malformed})
		wantAzureError(t, err, http.StatusBadRequest, "InvalidInput")
	})
}

// TestKeysThatAreNotStrings sends, through the SDK, the bodies the Python SDK's
// test_encoder.py sent to the real service (recordings test_encoder_create_entity_basic,
// ..._complex_keys and test_encoder_upsert_entity_complex_keys in Azure/azure-sdk-assets):
// an insert whose PartitionKey or RowKey is a JSON number or boolean, or annotated with another
// EDM type, is 400 InvalidInput "One of the request inputs is not valid."; an upsert, addressed
// by URL, ignores the body's keys and succeeds.
func TestKeysThatAreNotStrings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		c := s.newTable(t, "keytypes")
		for _, body := range []string{
			`{"PartitionKey":"PK","RowKey":1}`,
			`{"PartitionKey":"PK","RowKey":true}`,
			`{"PartitionKey":"PK","RowKey@odata.type":"Edm.Double","RowKey":3.14}`,
			`{"PartitionKey@odata.type":"Edm.DateTime","PartitionKey":"2022-04-01T09:30:45.000000Z","RowKey@odata.type":"Edm.Guid","RowKey":"eb651a6d-265e-49d5-9013-0353822c4591"}`,
			`{"PartitionKey@odata.type":"Edm.Binary","PartitionKey":"YmluYXJ5ZGF0YQ==","RowKey":1234}`,
		} {
			_, err := c.AddEntity(ctx, []byte(body), nil)
			wantAzureError(t, err, http.StatusBadRequest, "InvalidInput")
			var re *azcore.ResponseError
			if errors.As(err, &re) && !strings.Contains(re.Error(), "One of the request inputs is not valid.") {
				t.Errorf("%s: message lacks Azure's text: %v", body, err)
			}
		}
		for _, mode := range []aztables.UpdateMode{aztables.UpdateModeMerge, aztables.UpdateModeReplace} {
			body := `{"PartitionKey@odata.type":"Edm.DateTime","PartitionKey":"2022-04-01T09:30:45.000000Z","RowKey@odata.type":"Edm.Guid","RowKey":"eb651a6d-265e-49d5-9013-0353822c4591","Data":true}`
			if _, err := c.UpsertEntity(ctx, []byte(body), &aztables.UpsertEntityOptions{UpdateMode: mode}); err != nil {
				t.Fatalf("upsert (%s) with annotated keys: %v", mode, err)
			}
		}
		m, _ := getProps(t, c, "2022-04-01T09:30:45.000000Z", "eb651a6d-265e-49d5-9013-0353822c4591")
		if m["Data"] != true || m["PartitionKey"] != "2022-04-01T09:30:45.000000Z" {
			t.Fatalf("upserted entity: %v", m)
		}
	})
}
