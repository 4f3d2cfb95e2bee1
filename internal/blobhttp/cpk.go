package blobhttp

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/tabula-dev/tabula/internal/blob"
)

// Customer-provided keys (x-ms-encryption-key, -key-sha256, -algorithm): a blob written with
// one is read and written with it only (blob.Conditions.CustomerKey has the rules). Tabula
// encrypts nothing, with or without a key: it keeps the key's SHA-256, as the real service
// does, so that an application sees the same refusals and answers.

// customerKey reads the customer-provided key headers named with prefix ("x-ms-", or
// "x-ms-source-" for a copy source) and returns the key's SHA-256 (base64), "" when the
// request gives no key. A key comes with its SHA-256, which must be the key's, and on a
// write with x-ms-encryption-algorithm AES256: otherwise 400.
func customerKey(h http.Header, prefix string, write bool) (string, error) {
	keyName, shaName, algName := prefix+"encryption-key", prefix+"encryption-key-sha256", prefix+"encryption-algorithm"
	key, sha, alg := h.Get(keyName), h.Get(shaName), h.Get(algName)
	if key == "" {
		if sha != "" {
			return "", missingHeader(keyName)
		}
		return "", nil
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != 32 {
		return "", invalidHeader(keyName, key, "not the base64 of a 256-bit key")
	}
	if sha == "" {
		return "", missingHeader(shaName)
	}
	sum := sha256.Sum256(raw)
	if want := base64.StdEncoding.EncodeToString(sum[:]); sha != want {
		return "", invalidHeader(shaName, sha, "not the SHA-256 of "+keyName)
	}
	switch {
	case alg == "" && write:
		return "", missingHeader(algName)
	case alg != "" && alg != "AES256":
		return "", invalidHeader(algName, alg, "the one algorithm is AES256")
	}
	return sha, nil
}

// withCustomerKey sets cond to check the request's customer-provided key, for an operation
// that takes one; it returns the key's SHA-256 ("" for none).
func withCustomerKey(h http.Header, cond *blob.Conditions, write bool) (string, error) {
	sha, err := customerKey(h, "x-ms-", write)
	if err != nil {
		return "", err
	}
	cond.CustomerKey = &sha
	return sha, nil
}

// answerCustomerKey tells the client which key the operation used, as the service does.
func answerCustomerKey(out http.Header, sha string) {
	if sha != "" {
		out["x-ms-encryption-key-sha256"] = []string{sha}
	}
}
