package console

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/tabula-dev/tabula/internal/azerr"
	"github.com/tabula-dev/tabula/internal/faults"
)

// faultsAdmin is the live API of the fault rules:
//
//	GET    /admin/faults        the rules, with how many requests each has hit, and the
//	                            operations a rule may name, by service
//	PUT    /admin/faults        replace every rule with a JSON array of rules
//	POST   /admin/faults        add one rule (a JSON object), replacing one with its id
//	DELETE /admin/faults        remove every rule
//	DELETE /admin/faults/{id}   remove one rule
//
// Only an account's owner may call it: HTTP Basic with the account's name and key. The
// console page calls the same API at /api/faults, where a refusal carries no Basic challenge
// (challenge false), which would make the browser ask for a password itself.
type faultsAdmin struct {
	set       *faults.Set
	owners    owners
	challenge bool
}

func (a *faultsAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.owners.of(r); !ok {
		if a.challenge {
			w.Header().Set("WWW-Authenticate", `Basic realm="tabula admin"`)
		} else {
			w.Header()["Www-Authenticate"] = errNoOwner.Header["Www-Authenticate"]
		}
		fail(w, errNoOwner)
		return
	}
	id := r.PathValue("id")
	switch {
	case r.Method == http.MethodGet && id == "":
		writeJSON(w, http.StatusOK, map[string]any{"rules": a.set.Rules(), "operations": faults.Operations()})
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
			fail(w, azerr.Newf(azerr.ResourceNotFound, "No fault rule has the id %q.", id))
			return
		}
		a.answer(w, nil)
	default:
		fail(w, azerr.Newf(azerr.MethodNotAllowed, "%s is not an operation on %s.", r.Method, r.URL.Path))
	}
}

// answer gives the rules after a change, or why the change was refused (nothing changed).
func (a *faultsAdmin) answer(w http.ResponseWriter, err error) {
	if err != nil {
		fail(w, azerr.Newf(azerr.InvalidInput, "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": a.set.Rules()})
}
