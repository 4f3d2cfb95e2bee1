package odata

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// maxSelect is the most properties a $select may name: an entity has at most 255.
const maxSelect = 255

// ParseSelect parses $select: comma-separated names, spaces trimmed; "" or "*" means all (nil).
// A "*" among names also means all. Names repeat harmlessly (the first occurrence counts);
// names are case-sensitive and need not exist. An empty name ("a,,b") or one that is not a
// property name is a 400 InvalidInput.
func ParseSelect(s string) ([]string, error) {
	if t := strings.TrimSpace(s); t == "" || t == "*" {
		return nil, nil
	}
	var names []string
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		switch {
		case name == "*":
			return nil, nil
		case name == "":
			return nil, azerr.Newf(azerr.InvalidInput, "%s The $select query option '%s' contains an empty property name.", invalidInputSentence, s)
		case !isPropertyName(name):
			return nil, azerr.Newf(azerr.InvalidInput, "%s The $select query option names '%s', which is not a property name.", invalidInputSentence, name)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) > maxSelect {
		return nil, azerr.Newf(azerr.InvalidInput, "%s The $select query option names %d properties; at most %d are allowed.", invalidInputSentence, len(names), maxSelect)
	}
	return names, nil
}

func isPropertyName(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError || i == 0 && !isIdentStart(r) || i > 0 && !isIdentPart(r) {
			return false
		}
	}
	return true
}

// ParseTop parses $top: 1..1000; anything else is a 400 *azerr.Error. The code is InvalidInput,
// the code the Table service gives every query option it rejects ($filter included); the
// documentation says only that a $top above 1,000 fails with 400 (and an SDK user saw 400 for
// int.MaxValue, azure-sdk-for-net#26035), and SDKs act on the status alone. Only decimal
// digits are accepted: no sign, no spaces.
func ParseTop(s string) (int, error) {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) || n > 1000 {
			n = -1
			break
		}
		n = n*10 + int(s[i]-'0')
	}
	if len(s) == 0 || n < 1 || n > 1000 {
		return 0, azerr.Newf(azerr.InvalidInput, "%s The value '%s' of the $top query option must be an integer from 1 to 1000.", invalidInputSentence, s)
	}
	return n, nil
}
