package console

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"

	"github.com/tabula-dev/tabula/internal/auth"
	"github.com/tabula-dev/tabula/internal/faults"
)

// faultsAdmin is the live API of the fault rules:
//
//	GET    /admin/faults        the rules, with how many requests each has hit
//	PUT    /admin/faults        replace every rule with a JSON array of rules
//	POST   /admin/faults        add one rule (a JSON object), replacing one with its id
//	DELETE /admin/faults        remove every rule
//	DELETE /admin/faults/{id}   remove one rule
//
// Only an account's owner may call it: HTTP Basic with the account's name and key.
type faultsAdmin struct {
	set      *faults.Set
	accounts []auth.Account
}

func (a *faultsAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="tabula admin"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "the admin API needs HTTP Basic with an account name and its key"})
		return
	}
	id := r.PathValue("id")
	switch {
	case r.Method == http.MethodGet && id == "":
		writeJSON(w, http.StatusOK, map[string]any{"rules": a.set.Rules()})
	case r.Method == http.MethodPut && id == "":
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			var rules []faults.Rule
			if rules, err = faults.Parse(body); err == nil {
				err = a.set.Replace(rules)
			}
		}
		a.answer(w, err)
	case r.Method == http.MethodPost && id == "":
		var rule faults.Rule
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		err := dec.Decode(&rule)
		if err == nil {
			err = a.set.Add(rule)
		}
		a.answer(w, err)
	case r.Method == http.MethodDelete && id == "":
		a.answer(w, a.set.Replace(nil))
	case r.Method == http.MethodDelete:
		if !a.set.Remove(id) {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no rule has the id " + id})
			return
		}
		a.answer(w, nil)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": r.Method + " is not an operation on " + r.URL.Path})
	}
}

func (a *faultsAdmin) answer(w http.ResponseWriter, err error) {
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": a.set.Rules()})
}

func (a *faultsAdmin) authorized(r *http.Request) bool {
	name, key, ok := r.BasicAuth()
	if !ok {
		return false
	}
	decoded, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return false
	}
	for _, acct := range a.accounts {
		if acct.Name != name {
			continue
		}
		for _, k := range acct.Keys {
			if subtle.ConstantTimeCompare(k, decoded) == 1 {
				return true
			}
		}
	}
	return false
}
