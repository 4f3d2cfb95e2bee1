package tablehttp

import (
	"net/url"
	"strings"

	"github.com/tabula-dev/tabula/internal/azerr"
)

// resourceKind is what a request path addresses.
type resourceKind uint8

const (
	resService  resourceKind = iota + 1 // "/" (service properties and stats)
	resTables                           // "/Tables", "/Tables()"
	resTable                            // "/Tables('name')"
	resBatch                            // "/$batch"
	resEntities                         // "/{table}", "/{table}()"
	resEntity                           // "/{table}(PartitionKey='pk',RowKey='rk')"
	// resUnder is a path below a table, "/{table}/...": what a client configured with the
	// table's URL as its account endpoint sends ("/{table}/Tables", "/{table}/Tables('t')").
	// Azure reads the first segment as the table and what follows as within it.
	resUnder
)

// resource is a parsed request path.
type resource struct {
	kind         resourceKind
	table        string // for resTable, resEntities, resEntity, resUnder
	partitionKey string // for resEntity
	rowKey       string // for resEntity
	under        string // for resUnder: the path after the table's segment
}

// parseResource parses the path after the account. escaped is the path as sent on the wire;
// it is percent-decoded with path rules ("+" stays "+") before the key syntax is read, because
// clients percent-encode the already quote-doubled key.
func parseResource(escaped string) (resource, error) {
	// A path below a table is told by a slash on the wire: an escaped one (%2F) is part of a
	// name.
	if first, under, below := strings.Cut(strings.TrimPrefix(escaped, "/"), "/"); below {
		name, err := url.PathUnescape(first)
		if err != nil || name == "" || strings.ContainsAny(name, "()$") || strings.EqualFold(name, "Tables") {
			return resource{}, invalidURI(strings.TrimPrefix(escaped, "/"))
		}
		return resource{kind: resUnder, table: name, under: under}, nil
	}
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return resource{}, azerr.Newf(azerr.InvalidURI, "The requested URI does not represent any resource on the server: the path %q is not correctly percent-encoded.", escaped)
	}
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return resource{kind: resService}, nil
	}
	if p == "$batch" {
		return resource{kind: resBatch}, nil
	}
	name, args, hasArgs := strings.Cut(p, "(")
	if !hasArgs {
		if strings.EqualFold(name, "Tables") {
			return resource{kind: resTables}, nil
		}
		return resource{kind: resEntities, table: name}, nil
	}
	args, ok := strings.CutSuffix(args, ")")
	if !ok {
		return resource{}, invalidURI(p)
	}
	if strings.EqualFold(name, "Tables") {
		if args == "" {
			return resource{kind: resTables}, nil
		}
		t, rest, ok := readQuoted(strings.TrimSpace(args))
		if !ok || strings.TrimSpace(rest) != "" {
			return resource{}, invalidURI(p)
		}
		return resource{kind: resTable, table: t}, nil
	}
	if strings.TrimSpace(args) == "" {
		return resource{kind: resEntities, table: name}, nil
	}
	pk, rk, ok := parseEntityKeys(args)
	if !ok {
		return resource{}, azerr.Newf(azerr.InvalidURI, "The requested URI does not represent any resource on the server: %q is not of the form %s(PartitionKey='...',RowKey='...').", p, name)
	}
	return resource{kind: resEntity, table: name, partitionKey: pk, rowKey: rk}, nil
}

func invalidURI(p string) error {
	return azerr.Newf(azerr.InvalidURI, "The requested URI does not represent any resource on the server: %q.", p)
}

// parseEntityKeys reads "PartitionKey='pk',RowKey='rk'" (either order, optional spaces around
// the tokens). Keys may contain ',', '(', ')', '=' and doubled quotes, so this is a
// quote-aware scanner, not a split.
func parseEntityKeys(s string) (pk, rk string, ok bool) {
	var havePK, haveRK bool
	for i := 0; i < 2; i++ {
		s = strings.TrimLeft(s, " ")
		name, rest, found := strings.Cut(s, "=")
		if !found {
			return "", "", false
		}
		val, rest, quoted := readQuoted(strings.TrimLeft(rest, " "))
		if !quoted {
			return "", "", false
		}
		switch strings.TrimRight(name, " ") {
		case "PartitionKey":
			if havePK {
				return "", "", false
			}
			pk, havePK = val, true
		case "RowKey":
			if haveRK {
				return "", "", false
			}
			rk, haveRK = val, true
		default:
			return "", "", false
		}
		rest = strings.TrimLeft(rest, " ")
		if i == 0 {
			if !strings.HasPrefix(rest, ",") {
				return "", "", false
			}
			rest = rest[1:]
		} else if rest != "" {
			return "", "", false
		}
		s = rest
	}
	return pk, rk, havePK && haveRK
}

// readQuoted reads a single-quoted OData string at the start of s, turning ” into ', and
// returns it with the remainder of s.
func readQuoted(s string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", s, false
}

// entityPath writes the key part of an entity URL the way clients do: quotes doubled, then
// percent-encoded so the result is a valid path segment.
func entityPath(table, pk, rk string) string {
	return table + "(PartitionKey='" + escapeKey(pk) + "',RowKey='" + escapeKey(rk) + "')"
}

func escapeKey(k string) string {
	// PathEscape would also encode the doubled quotes; clients (the JS SDK reads RowKey='(.*)'
	// out of batch Location headers) expect them literal.
	return strings.ReplaceAll(url.PathEscape(strings.ReplaceAll(k, "'", "''")), "%27", "'")
}
