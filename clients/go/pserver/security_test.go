package pserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// selfSigned makes a certificate and its key (PEM), valid for an hour.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "test"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func expectInvalidSecurity(t *testing.T, what string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrClientInvalidSecurity) || e.Code != codes.InvalidArgument {
		t.Fatalf("%s: got %v, want an *Error with %s", what, err, ErrClientInvalidSecurity)
	}
}

func TestLoadSecurityReadsTheFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	got, token, err := LoadSecurity(SecurityFiles{
		CAFile: write("ca.pem", "CA"), CertFile: write("c.pem", "CERT"), KeyFile: write("c.key", "KEY"),
		TokenFile: write("t", " 0123456789abcdef0123\n"), ServerName: "pserver-0.ml.svc",
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.CA) != "CA" || string(got.Cert) != "CERT" || string(got.Key) != "KEY" ||
		got.ServerName != "pserver-0.ml.svc" || token != "0123456789abcdef0123" {
		t.Fatalf("LoadSecurity = %+v, %q", got, token)
	}
	got, token, err = LoadSecurity(SecurityFiles{TokenFile: write("u", "0123456789abcdef")})
	if err != nil || got != nil || token != "0123456789abcdef" {
		t.Fatalf("token only: %+v, %q, %v", got, token, err)
	}
	missing := filepath.Join(dir, "nope.pem")
	_, _, err = LoadSecurity(SecurityFiles{CAFile: missing})
	expectInvalidSecurity(t, "a missing file", err)
	if !strings.Contains(err.Error(), missing) {
		t.Fatalf("the error does not name the file: %v", err)
	}
}

func TestDialOptionsRefuseWhatCannotWork(t *testing.T) {
	cert, key := selfSigned(t)
	cases := map[string]struct {
		tls   *TLSOptions
		token string
	}{
		"a token without TLS":            {nil, "0123456789abcdef"},
		"a certificate without its key":  {&TLSOptions{Cert: cert}, ""},
		"a key without its certificate":  {&TLSOptions{Key: key}, ""},
		"a certificate with another key": {&TLSOptions{Cert: cert, Key: []byte("not a key")}, ""},
		"a CA that is not PEM":           {&TLSOptions{CA: []byte("not PEM")}, ""},
		"a token with a space":           {&TLSOptions{}, "two words"},
	}
	for what, c := range cases {
		_, err := DialOptions(c.tls, c.token)
		expectInvalidSecurity(t, what, err)
	}
	if _, err := DialOptions(&TLSOptions{CA: cert, Cert: cert, Key: key, ServerName: "x"}, "0123456789abcdef"); err != nil {
		t.Fatalf("mutual TLS with a token: %v", err)
	}
}

func TestConnectRefusesATokenWithoutTLS(t *testing.T) {
	// Standalone, Connect tolerates a pserver that is not up yet (nothing listens on port 1):
	// without the check it would return a client.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{Pservers: []string{"127.0.0.1:1"}, Token: "0123456789abcdef"})
	if c != nil {
		c.Close()
	}
	expectInvalidSecurity(t, "Connect", err)
}

func TestTheBearerTokenNeedsTLS(t *testing.T) {
	b := bearerToken("0123456789abcdef")
	md, err := b.GetRequestMetadata(context.Background())
	if err != nil || md["authorization"] != "Bearer 0123456789abcdef" || len(md) != 1 {
		t.Fatalf("metadata = %v, %v", md, err)
	}
	if !b.RequireTransportSecurity() {
		t.Fatal("a bearer token must require transport security")
	}
}

func TestRefusalsAreFinal(t *testing.T) {
	for code, errorCode := range map[codes.Code]pb.ErrorCode{
		codes.Unauthenticated:  pb.ErrorCode_AUTH_UNAUTHENTICATED,
		codes.PermissionDenied: pb.ErrorCode_AUTH_PERMISSION_DENIED,
	} {
		e := &Error{Code: code, ErrorCode: errorCode, Server: true}
		if !IsRefused(e) || IsRetryable(e) || IsStale(e) {
			t.Fatalf("%s: refused %v, retryable %v, stale %v", code, IsRefused(e), IsRetryable(e), IsStale(e))
		}
	}
	if IsRefused(&Error{Code: codes.Unavailable, Server: true}) || IsRefused(clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, nil, "x")) {
		t.Fatal("only a server's UNAUTHENTICATED or PERMISSION_DENIED is a refusal")
	}
}
