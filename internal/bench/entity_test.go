package bench

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/internal/edm"
)

func TestMixed11EntityHasElevenPropertiesOfEveryEDMTypeAnnotatedLikeTheSDKs(t *testing.T) {
	want := []struct {
		name string
		typ  edm.Type
	}{
		{"Category", edm.Int32}, {"Units", edm.Int32}, {"Name", edm.String}, {"Region", edm.String},
		{"Counter", edm.Int64}, {"Score", edm.Double}, {"Active", edm.Boolean}, {"Created", edm.DateTime},
		{"Id", edm.Guid}, {"Payload", edm.Binary}, {"Description", edm.String},
	}
	shape, err := parseEntityShape(shapeMixed11, 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	if shape.asked != mixed11Size {
		t.Fatalf("mixed11 without --entity-size asks for %d bytes, want %d", shape.asked, mixed11Size)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, idx := range []int64{0, 1, 42, 99_999, 12_345_678} {
		pk, rk := readKeys(idx, 10)
		body := shape.appendJSON(nil, rng, pk, rk, idx)
		d, err := edm.DecodeJSON(body)
		if err != nil {
			t.Fatalf("entity %d does not decode: %v\n%s", idx, err, body)
		}
		if d.PartitionKey != pk || d.RowKey != rk || len(d.Properties) != len(want) {
			t.Fatalf("entity %d: keys %q %q, %d properties, want %d", idx, d.PartitionKey, d.RowKey, len(d.Properties), len(want))
		}
		for i, p := range d.Properties {
			if p.Name != want[i].name || p.Value.Type != want[i].typ {
				t.Errorf("entity %d property %d is %s %s, want %s %s", idx, i, p.Name, p.Value.Type.Name(), want[i].name, want[i].typ.Name())
			}
		}
		if c, _ := d.Get("Category"); c.Int != idx%categories {
			t.Errorf("entity %d has Category %d", idx, c.Int)
		}
		if n := strings.Count(string(body), "@odata.type"); n != 5 {
			t.Errorf("entity %d has %d annotations, want 5 (Int64, Double, DateTime, Guid, Binary)", idx, n)
		}
		if len(body) < mixed11Size-40 || len(body) > mixed11Size+40 {
			t.Errorf("entity %d has %d bytes of JSON, want about %d", idx, len(body), mixed11Size)
		}
	}
}

func TestEntityShapeFlag(t *testing.T) {
	for _, c := range []struct {
		name      string
		size      int
		sizeGiven bool
		wantAsked int
		wantErr   bool
	}{
		{shapeTyped10, 1024, false, 1024, false},
		{shapeTyped10, 600, true, 600, false},
		{shapeMixed11, 1024, false, mixed11Size, false},
		{shapeMixed11, 2048, true, 2048, false},
		{"mixed12", 1024, false, 0, true},
	} {
		s, err := parseEntityShape(c.name, c.size, c.sizeGiven)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want error %v", c.name, err, c.wantErr)
			continue
		}
		if err == nil && (s.name != c.name || s.asked != c.wantAsked) {
			t.Errorf("%s size %d given %v: shape %s of %d bytes, want %d", c.name, c.size, c.sizeGiven, s.name, s.asked, c.wantAsked)
		}
	}
}
