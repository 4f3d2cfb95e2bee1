package odata

import (
	"fmt"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// The messages of syntax errors are those of the .NET OData library the service uses (the
// real service answered `aaa bbb ccc` with "Syntax error at position 7 in 'aaa bbb ccc'.",
// recorded in azure-sdk-for-python test_query_invalid_filter). Other messages start with the
// service's generic sentence for their code and then say what was wrong, since SDKs look only
// at status and code.
const (
	invalidInputSentence   = "One of the request inputs is not valid."
	notImplementedSentence = "The requested operation is not implemented on the specified resource."
)

// utf16Offset converts a byte offset in s into the position the service reports: a count of
// UTF-16 code units, because the service indexes .NET strings. Invalid UTF-8 bytes count one
// unit each.
func utf16Offset(s string, byteOff int) int {
	n := 0
	for i := 0; i < byteOff && i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// syntaxError reports input the OData grammar does not accept. at is the byte offset the
// OData library would name: the end of the token it could not use.
func syntaxError(src string, at int) error {
	return azerr.Newf(azerr.InvalidInput, "Syntax error at position %d in '%s'.", utf16Offset(src, at), src)
}

// parseErrorf reports a syntax error in one of the OData library's specific wordings; format
// is a constant with two verbs, for the UTF-16 position and for src.
func parseErrorf(src string, at int, format string) error {
	return azerr.Newf(azerr.InvalidInput, format, utf16Offset(src, at), src)
}

// invalidCharacter reports a character no token starts with.
func invalidCharacter(src string, r rune, at int) error {
	return azerr.Newf(azerr.InvalidInput, "Syntax error: character '%c' is not valid at position %d in '%s'.",
		r, utf16Offset(src, at), src)
}

// unrecognizedLiteral reports a literal whose text does not denote a value of its type, e.g.
// an unsuffixed integer beyond Int32 (the service answers "Unrecognized 'Edm.Int32' literal").
func unrecognizedLiteral(src string, typeName, text string, at int) error {
	return azerr.Newf(azerr.InvalidInput, "Unrecognized '%s' literal '%s' at '%d' in '%s'.",
		typeName, text, utf16Offset(src, at), src)
}

// invalidFilter reports a well-formed filter the Table service cannot evaluate, such as a
// comparison with null (real service: 400 InvalidInput with the generic sentence, seen in
// Azure/Azurite#2471).
func invalidFilter(src string, at int, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	return azerr.Newf(azerr.InvalidInput, "%s %s at position %d in '%s'.",
		invalidInputSentence, detail, utf16Offset(src, at), src)
}

// notImplemented reports OData the service recognises but does not implement, such as
// startswith(...) (real service: 501 NotImplemented, seen in azure-sdk-for-python#20283 and
// azure-sdk-for-js#19494). SDK retry policies do not retry 501.
func notImplemented(src string, at int, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	return azerr.Newf(azerr.NotImplemented, "%s %s at position %d in '%s'.",
		notImplementedSentence, detail, utf16Offset(src, at), src)
}
