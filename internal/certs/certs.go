// Package certs makes TLS certificates for experiments and tests: a
// self-signed certificate by default, or a pair loaded from files.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"time"
)

// Options select the key type and the names of a self-signed certificate.
type Options struct {
	// Ed25519 selects an Ed25519 key (deterministic signatures of fixed
	// size, which keeps simulated handshakes byte-for-byte reproducible);
	// otherwise ECDSA P-256.
	Ed25519 bool
	// Rand is the key source; nil means crypto/rand. With a seeded reader
	// and Ed25519 the certificate is the same in every run.
	Rand io.Reader
	// Names are DNS names or IP addresses; default localhost, 127.0.0.1, ::1.
	Names []string
	// NotBefore anchors the validity period; default now minus one hour.
	NotBefore time.Time
}

// SelfSigned returns a self-signed certificate valid for a year.
func SelfSigned(o Options) (tls.Certificate, error) {
	r := o.Rand
	if r == nil {
		r = rand.Reader
	}
	var priv crypto.Signer
	var err error
	if o.Ed25519 {
		_, priv, err = ed25519.GenerateKey(r)
	} else {
		priv, err = ecdsa.GenerateKey(elliptic.P256(), r)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: key: %w", err)
	}
	names := o.Names
	if len(names) == 0 {
		names = []string{"localhost", "127.0.0.1", "::1"}
	}
	nb := o.NotBefore
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mpq self-signed"},
		NotBefore:             nb,
		NotAfter:              nb.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(r, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv, Leaf: leaf}, nil
}

// Load reads a PEM certificate chain and key, or makes a self-signed pair
// when both paths are empty.
func Load(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" && keyFile == "" {
		return SelfSigned(Options{})
	}
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fmt.Errorf("certs: need both a certificate and a key file")
	}
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: %w", err)
	}
	return c, nil
}

// Pool returns a certificate pool trusting the given certificate.
func Pool(c tls.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	if c.Leaf != nil {
		p.AddCert(c.Leaf)
	}
	return p
}
