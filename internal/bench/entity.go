package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Entities come in two shapes (--entity-shape), both of every EDM type a Table entity can
// hold, with the annotations a client must send for the types JSON cannot tell apart
// (Int64, Double, DateTime, Guid, Binary: what the Python SDK annotates):
//
//	typed10 (the default), ten properties besides the keys, padded to --entity-size:
//	  Name String, Region String, Category Int32, Counter Int64, Score Double, Active Boolean,
//	  Created DateTime, Id Guid, Description String (padding), Payload Binary (padding)
//	mixed11, eleven properties, about 1.4 KB of JSON unless --entity-size says otherwise: the
//	  shape issue 17 measured Tabula and Azurite with. In the order of types:
//	  Category Int32, Units Int32, Name String, Region String, Counter Int64, Score Double,
//	  Active Boolean, Created DateTime (with seven fraction digits, as .NET sends them), Id Guid,
//	  Payload Binary (padding), Description String (padding)
//
// Everything but the padding is a function of the entity's index, so rewriting an entity
// (upserts, merges) leaves what queries select unchanged. The padding is random on every
// write: identical bytes in every entity would let a store that compresses (Pebble does) look
// better than it is.

// categories is the number of distinct Category values: a filter on one value selects 1%.
const categories = 100

// scanCategory is the Category value the filtered table scan asks for.
const scanCategory = 42

var regions = [...]string{"westeurope", "northeurope", "eastus", "eastus2", "westus2", "centralus", "japaneast", "australiaeast"}

var createdBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// The entity shapes --entity-shape names, and the size mixed11 has unless --entity-size is
// given.
const (
	shapeTyped10     = "typed10"
	shapeMixed11     = "mixed11"
	mixed11Size      = 1400
	defaultShapeName = shapeTyped10
)

var shapeNames = []string{shapeTyped10, shapeMixed11}

// entityShape is one of the shapes above, with the padding that brings it to the requested
// size.
type entityShape struct {
	name       string
	asked      int // the size asked for
	descLen    int // characters of Description
	payloadLen int // base64 characters of Payload, a multiple of 4
	size       int // bytes of a typical entity's JSON
}

// newEntityShape chooses the padding for entities of the named shape of about size bytes of
// JSON, split evenly between a string and a binary property. Below the size of the fixed
// properties (about 450 bytes) there is no padding.
func newEntityShape(name string, size int) entityShape {
	s := entityShape{name: name, asked: size}
	rng := rand.New(rand.NewPCG(1, 2))
	// A five-digit index: what most of a 100,000-entity table has. Longer or shorter numbers
	// move the size by a few bytes.
	const typical = 50_000
	fixed := len(s.appendJSON(nil, rng, "p0000", "r0000000000", typical))
	rest := max(size-fixed, 0)
	s.descLen = rest / 2
	s.payloadLen = (rest - s.descLen) / 4 * 4
	s.size = len(s.appendJSON(nil, rng, "p0000", "r0000000000", typical))
	return s
}

// appendJSON appends the JSON of entity number idx with the given keys.
func (s entityShape) appendJSON(b []byte, rng *rand.Rand, pk, rk string, idx int64) []byte {
	if s.name == shapeMixed11 {
		return s.appendMixed11(b, rng, pk, rk, idx)
	}
	b = append(b, `{"PartitionKey":"`...)
	b = append(b, pk...)
	b = append(b, `","RowKey":"`...)
	b = append(b, rk...)
	b = append(b, `","Name":"entity `...)
	b = strconv.AppendInt(b, idx, 10)
	b = append(b, `","Region":"`...)
	b = append(b, regions[idx%int64(len(regions))]...)
	b = append(b, `","Category":`...)
	b = strconv.AppendInt(b, idx%categories, 10)
	b = append(b, `,"Counter@odata.type":"Edm.Int64","Counter":"`...)
	b = strconv.AppendInt(b, idx*1_000_003, 10)
	b = append(b, `","Score@odata.type":"Edm.Double","Score":`...)
	b = strconv.AppendFloat(b, float64(idx)*0.25+0.125, 'f', -1, 64)
	b = append(b, `,"Active":`...)
	b = strconv.AppendBool(b, idx%3 == 0)
	b = append(b, `,"Created@odata.type":"Edm.DateTime","Created":"`...)
	b = createdBase.Add(time.Duration(idx)*time.Second).AppendFormat(b, "2006-01-02T15:04:05Z")
	b = append(b, `","Id@odata.type":"Edm.Guid","Id":"`...)
	b = appendGUID(b, uint64(idx))
	b = append(b, `","Description":"`...)
	b = appendRandomChars(b, rng, s.descLen)
	b = append(b, `","Payload@odata.type":"Edm.Binary","Payload":"`...)
	b = appendRandomChars(b, rng, s.payloadLen)
	b = append(b, `"}`...)
	return b
}

// appendMixed11 is appendJSON for the mixed11 shape.
func (s entityShape) appendMixed11(b []byte, rng *rand.Rand, pk, rk string, idx int64) []byte {
	b = append(b, `{"PartitionKey":"`...)
	b = append(b, pk...)
	b = append(b, `","RowKey":"`...)
	b = append(b, rk...)
	b = append(b, `","Category":`...)
	b = strconv.AppendInt(b, idx%categories, 10)
	b = append(b, `,"Units":`...)
	b = strconv.AppendInt(b, idx%1000*7, 10)
	b = append(b, `,"Name":"entity `...)
	b = strconv.AppendInt(b, idx, 10)
	b = append(b, `","Region":"`...)
	b = append(b, regions[idx%int64(len(regions))]...)
	b = append(b, `","Counter@odata.type":"Edm.Int64","Counter":"`...)
	b = strconv.AppendInt(b, idx*1_000_003, 10)
	b = append(b, `","Score@odata.type":"Edm.Double","Score":`...)
	b = strconv.AppendFloat(b, float64(idx)*0.25+0.125, 'f', -1, 64)
	b = append(b, `,"Active":`...)
	b = strconv.AppendBool(b, idx%3 == 0)
	b = append(b, `,"Created@odata.type":"Edm.DateTime","Created":"`...)
	b = createdBase.Add(time.Duration(idx)*1_000_100*time.Microsecond).AppendFormat(b, "2006-01-02T15:04:05.0000000Z")
	b = append(b, `","Id@odata.type":"Edm.Guid","Id":"`...)
	b = appendGUID(b, uint64(idx))
	b = append(b, `","Payload@odata.type":"Edm.Binary","Payload":"`...)
	b = appendRandomChars(b, rng, s.payloadLen)
	b = append(b, `","Description":"`...)
	b = appendRandomChars(b, rng, s.descLen)
	b = append(b, `"}`...)
	return b
}

const hexDigits = "0123456789abcdef"

// appendGUID appends a version-4-shaped GUID derived from n.
func appendGUID(b []byte, n uint64) []byte {
	hi := n*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	lo := hi ^ (hi >> 31) ^ n<<17
	var g [32]byte
	for i := range 16 {
		g[i] = hexDigits[hi>>(60-4*i)&15]
		g[16+i] = hexDigits[lo>>(60-4*i)&15]
	}
	g[12], g[16] = '4', '8'
	b = append(b, g[0:8]...)
	b = append(b, '-')
	b = append(b, g[8:12]...)
	b = append(b, '-')
	b = append(b, g[12:16]...)
	b = append(b, '-')
	b = append(b, g[16:20]...)
	b = append(b, '-')
	return append(b, g[20:32]...)
}

// base64Chars is the standard base64 alphabet: random characters from it make a valid
// Edm.Binary value (any multiple of four of them decodes) and a valid JSON string.
const base64Chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func appendRandomChars(b []byte, rng *rand.Rand, n int) []byte {
	for n > 0 {
		r := rng.Uint64()
		for j := 0; j < 10 && n > 0; j++ {
			b = append(b, base64Chars[r&63])
			r >>= 6
			n--
		}
	}
	return b
}

// Keys. Benchmark keys are alphanumeric and fixed-width, so they sort as numbers do and never
// need escaping in a URL or a filter.

// readKeys returns the keys of preloaded entity idx of a table spread over partitions.
func readKeys(idx int64, partitions int) (pk, rk string) {
	return partitionKey(int(idx % int64(partitions))), rowKey("r", idx)
}

func partitionKey(p int) string {
	return "p" + pad(strconv.Itoa(p), 4)
}

// rowKey is prefix followed by n in ten digits.
func rowKey(prefix string, n int64) string {
	return prefix + pad(strconv.FormatInt(n, 10), 10)
}

func pad(digits string, width int) string {
	for len(digits) < width {
		digits = "0" + digits
	}
	return digits
}

// preloadedIn returns how many of the entities 0..n-1 fall in partition p of partitions.
func preloadedIn(n int64, partitions, p int) int64 {
	if int64(p) >= n {
		return 0
	}
	return (n-1-int64(p))/int64(partitions) + 1
}

// preloadedInCategory returns how many of the entities 0..n-1 have Category c.
func preloadedInCategory(n int64, c int64) int64 {
	if c >= n {
		return 0
	}
	return (n-1-c)/categories + 1
}

// parseEntityShape returns the shape --entity-shape names, of --entity-size bytes when
// sizeGiven and otherwise of the shape's own size (1024 for typed10, 1400 for mixed11).
func parseEntityShape(name string, size int, sizeGiven bool) (entityShape, error) {
	switch name {
	case shapeTyped10:
	case shapeMixed11:
		if !sizeGiven {
			size = mixed11Size
		}
	default:
		return entityShape{}, fmt.Errorf("--entity-shape %q: the shapes are %s", name, strings.Join(shapeNames, ", "))
	}
	return newEntityShape(name, size), nil
}
