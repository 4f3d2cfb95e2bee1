package auth

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestDevelopmentAccount(t *testing.T) {
	acct := DevelopmentAccount()
	if acct.Name != "devstoreaccount1" || len(acct.Keys) != 1 || len(acct.Keys[0]) != 64 {
		t.Fatalf("DevelopmentAccount() = %q with %d keys", acct.Name, len(acct.Keys))
	}
}

func TestParseAccounts(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString([]byte("key one"))
	k2 := base64.StdEncoding.EncodeToString([]byte("key two"))
	for _, tc := range []struct {
		name string
		in   string
		want map[string][]string // account → decoded keys
	}{
		{"empty", "", map[string][]string{}},
		{"one account", "acct1:" + k1, map[string][]string{"acct1": {"key one"}}},
		{"two keys", "acct1:" + k1 + ":" + k2, map[string][]string{"acct1": {"key one", "key two"}}},
		{"comma separated, blanks", " acct1:" + k1 + " , acct2:" + k2 + ",", map[string][]string{"acct1": {"key one"}, "acct2": {"key two"}}},
		{"Azurite's semicolons", "acct1:" + k1 + ";acct2:" + k2 + ":" + k1, map[string][]string{"acct1": {"key one"}, "acct2": {"key two", "key one"}}},
		{"development account", "devstoreaccount1:" + DevelopmentAccountKey, map[string][]string{"devstoreaccount1": {string(devKey())}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAccounts(tc.in)
			if err != nil {
				t.Fatalf("ParseAccounts: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d accounts, want %d", len(got), len(tc.want))
			}
			for _, acct := range got {
				want := tc.want[acct.Name]
				if len(acct.Keys) != len(want) {
					t.Fatalf("%s: got %d keys, want %d", acct.Name, len(acct.Keys), len(want))
				}
				for i := range want {
					if !bytes.Equal(acct.Keys[i], []byte(want[i])) {
						t.Errorf("%s key %d differs", acct.Name, i+1)
					}
				}
			}
		})
	}
}

func TestParseAccountsRejects(t *testing.T) {
	k := base64.StdEncoding.EncodeToString([]byte("key"))
	for name, in := range map[string]string{
		"no key":          "acct1",
		"empty key":       "acct1:",
		"three keys":      "acct1:" + k + ":" + k + ":" + k,
		"key not base64":  "acct1:SeCrEt!!value",
		"upper case name": "Acct1:" + k,
		"name too short":  "ab:" + k,
		"name too long":   strings.Repeat("a", 25) + ":" + k,
		"hyphen in name":  "my-acct:" + k,
		"listed twice":    "acct1:" + k + ",acct1:" + k,
	} {
		t.Run(name, func(t *testing.T) {
			accounts, err := ParseAccounts(in)
			if err == nil {
				t.Fatalf("ParseAccounts(%q) = %d accounts, want an error", in, len(accounts))
			}
			if strings.Contains(err.Error(), "SeCrEt") || strings.Contains(err.Error(), k) {
				t.Errorf("error %q echoes a key", err)
			}
		})
	}
}

func TestAuthenticatorAccountLookupIgnoresCase(t *testing.T) {
	a := NewAuthenticator([]Account{DevelopmentAccount()})
	for _, name := range []string{"devstoreaccount1", "DevStoreAccount1"} {
		if acct, ok := a.Account(name); !ok || acct.Name != "devstoreaccount1" {
			t.Errorf("Account(%q) = %q, %v", name, acct.Name, ok)
		}
	}
	if _, ok := a.Account("devstoreaccount2"); ok {
		t.Errorf("found an account that is not hosted")
	}
}
