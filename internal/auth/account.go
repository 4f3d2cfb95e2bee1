package auth

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Account is a storage account Tabula hosts.
type Account struct {
	// Name is the account name as it appears in URLs and Authorization headers: 3–24 lower-case
	// letters and digits on Azure.
	Name string
	// Keys are the decoded account keys (one or two). A request signed with any of them is
	// accepted, so a client can move to the second key while the first is regenerated.
	Keys [][]byte
}

// The emulator's well-known credentials: identical in Azurite and the legacy Storage Emulator, and
// built into every SDK's UseDevelopmentStorage=true. They are public; they protect nothing.
const (
	DevelopmentAccountName = "devstoreaccount1"
	DevelopmentAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// DevelopmentAccount is devstoreaccount1 with the well-known emulator key.
func DevelopmentAccount() Account {
	key, err := base64.StdEncoding.DecodeString(DevelopmentAccountKey)
	if err != nil {
		panic("auth: the development account key constant is not base64")
	}
	return Account{Name: DevelopmentAccountName, Keys: [][]byte{key}}
}

// ParseAccounts parses the flag/environment syntax
//
//	name:base64key[:base64key2][,name2:base64key...]
//
// Entries may also be separated by ';', which is Azurite's AZURITE_ACCOUNTS syntax; neither
// separator can occur in a name or in base64. Blanks around entries are ignored and an empty
// string yields no accounts. Names must follow Azure's rule (3–24 lower-case letters and digits)
// because host-style URLs carry them as DNS labels. Errors name the entry by account name and
// position, never by key.
func ParseAccounts(s string) ([]Account, error) {
	var accounts []Account
	seen := map[string]bool{}
	entries := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' })
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, ":")
		name := parts[0]
		if err := validAccountName(name); err != nil {
			return nil, fmt.Errorf("accounts entry %d: %w", i+1, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("accounts entry %d: account %q is listed twice", i+1, name)
		}
		seen[name] = true
		keys := parts[1:]
		if len(keys) == 0 || len(keys) > 2 {
			return nil, fmt.Errorf("accounts entry %d: account %q needs one or two keys (name:key[:key2]), got %d", i+1, name, len(keys))
		}
		acct := Account{Name: name}
		for k, encoded := range keys {
			key, err := base64.StdEncoding.DecodeString(encoded)
			if err != nil || len(key) == 0 {
				// The key itself is never quoted: error messages end up in logs.
				return nil, fmt.Errorf("accounts entry %d: account %q: key %d is not non-empty standard base64", i+1, name, k+1)
			}
			acct.Keys = append(acct.Keys, key)
		}
		accounts = append(accounts, acct)
	}
	return accounts, nil
}

func validAccountName(name string) error {
	if len(name) < 3 || len(name) > 24 {
		return fmt.Errorf("account name %q must be 3 to 24 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return fmt.Errorf("account name %q may contain only lower-case letters and digits", name)
		}
	}
	return nil
}
