package uuid

import (
	"regexp"
	"testing"
)

func TestNewIsARandomVersion4UUID(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := make(map[string]bool)
	for range 1000 {
		u := New()
		if !form.MatchString(u) {
			t.Fatalf("%q is not a version 4 UUID in lower-case text form", u)
		}
		if seen[u] {
			t.Fatalf("%q made twice", u)
		}
		seen[u] = true
	}
}
