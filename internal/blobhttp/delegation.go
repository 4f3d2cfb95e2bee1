package blobhttp

import (
	"net/http"
	"time"

	"github.com/tabula-dev/tabula/internal/auth"
)

// getUserDelegationKey serves Get User Delegation Key (blob.md §6.4): a bearer token's holder
// gets a key to sign user delegation SASes with (auth.IssueDelegationKey).
func (s *Server) getUserDelegationKey(rq *request) error {
	if err := rq.Note(auth.OpGetUserDelegationKey.Name, ""); err != nil {
		return err
	}
	body, err := readXMLBody(rq, 64<<10)
	if err != nil {
		return err
	}
	version := rq.Version
	if version == "" {
		version = defaultVersion
	}
	answer, err := s.auth.IssueDelegationKey(rq.grant, rq.Account, auth.Blob, version, body, time.Now())
	if err != nil {
		return err
	}
	return rq.writeXML(http.StatusOK, answer)
}
