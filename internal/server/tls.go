package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// LoadTLS returns the TLS configuration serving the certificate chain and key in the PEM
// files certFile and keyFile.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return tlsConfig(cert), nil
}

func tlsConfig(cert tls.Certificate) *tls.Config {
	// HTTP/1.1 only: Tabula serves what Azure Storage serves to its SDKs.
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

// LocalCA is a certificate authority Tabula makes for itself so that HTTPS works with no
// setup: its certificate is what clients are told to trust, and it signs a server certificate
// for 127.0.0.1, ::1 and localhost.
type LocalCA struct {
	Dir    string // where the files live
	CAFile string // the CA certificate (PEM) clients should trust
	TLS    *tls.Config
}

// Files of a LocalCA in its directory.
const (
	caCertFile     = "ca.pem"
	caKeyFile      = "ca-key.pem"
	serverCertFile = "server.pem"
	serverKeyFile  = "server-key.pem"
)

// serverCertLifetime is how long a server certificate the local CA issues is valid; it is
// renewed at start-up when less than a tenth of that is left. Clients such as browsers refuse
// leaf certificates valid for more than 398 days.
const serverCertLifetime = 397 * 24 * time.Hour

// OpenLocalCA loads the local CA kept in dir, creating the CA on first use and a new server
// certificate whenever the old one is missing or near its end.
func OpenLocalCA(dir string) (*LocalCA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	caCert, caKey, err := loadPair(path(caCertFile), path(caKeyFile))
	if errors.Is(err, os.ErrNotExist) {
		caCert, caKey, err = createCA(path(caCertFile), path(caKeyFile))
	}
	if err != nil {
		return nil, fmt.Errorf("the local CA in %s: %w", dir, err)
	}
	leaf, leafKey, err := loadPair(path(serverCertFile), path(serverKeyFile))
	if err != nil || time.Until(leaf.NotAfter) < serverCertLifetime/10 || leaf.CheckSignatureFrom(caCert) != nil {
		if leaf, leafKey, err = issueServerCert(caCert, caKey, path(serverCertFile), path(serverKeyFile)); err != nil {
			return nil, fmt.Errorf("issuing a server certificate in %s: %w", dir, err)
		}
	}
	cert := tls.Certificate{Certificate: [][]byte{leaf.Raw, caCert.Raw}, PrivateKey: leafKey, Leaf: leaf}
	return &LocalCA{Dir: dir, CAFile: path(caCertFile), TLS: tlsConfig(cert)}, nil
}

func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s or %s is not PEM", certFile, keyFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func createCA(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "Tabula local CA", Organization: []string{"Tabula (local development)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return writePair(tmpl, tmpl, key, key, certFile, keyFile)
}

func issueServerCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(serverCertLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	return writePair(tmpl, ca, key, caKey, certFile, keyFile)
}

// writePair signs tmpl for key with parent's signer and writes the certificate and key.
func writePair(tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey, certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

// tlsOfferedKey marks the context of every request to a server that serves HTTPS, so that a
// SAS restricted to HTTPS can be refused over plain HTTP there (and only there: a server
// without HTTPS has no other way to take it).
type tlsOfferedKey struct{}

// TLSOffered reports whether the request came to an endpoint that serves HTTPS too.
func TLSOffered(ctx context.Context) bool {
	offered, _ := ctx.Value(tlsOfferedKey{}).(bool)
	return offered
}
