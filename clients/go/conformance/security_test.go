//go:build integration

package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pserver/pserver/clients/go/pserver"
	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// serverName is what the test server certificate names besides localhost; it does not name
// 127.0.0.1, so dialling 127.0.0.1 needs TLSOptions.ServerName.
const serverName = "pserver.test"

// TestSecurity runs the client against one pserver serving mutual TLS with an --auth-config:
// certificates with OU trainers are trainers, OU admins admins, and one token is a trainer's.
// The subtests share the pserver; the model ("w", four zeros, SGD at rate 1) is initialized
// once by a trainer certificate.
func TestSecurity(t *testing.T) {
	ctx := testContext(t)
	certs := makeCertificates(t)
	port := startSecurePserver(t, certs)
	byName, byIP := "localhost:"+port, "127.0.0.1:"+port
	sgd := &pb.OptimizerConfig{Algorithm: &pb.OptimizerConfig_Sgd{Sgd: &pb.Sgd{}}, LearningRate: &pb.LearningRate{Base: proto.Float64(1)}}
	model := map[string]pserver.Tensor{"w": pserver.Float32s(make([]float32, 4))}

	initializer, err := pserver.Connect(ctx, pserver.Options{Pservers: []string{byName}, TLS: certs.tls(t, "trainer", ""), CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect with a trainer certificate: %v", err)
	}
	err = initializer.InitParams(ctx, model, sgd)
	initializer.Close()
	if err != nil {
		t.Fatalf("InitParams with a trainer certificate: %v", err)
	}

	// pushAndPull pushes one gradient between two pulls: the pserver applied it (w -= grad).
	pushAndPull := func(t *testing.T, opts pserver.Options) {
		opts.NotInitializer, opts.CallTimeout = true, 10*time.Second
		client, err := pserver.Connect(ctx, opts)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer client.Close()
		if err := client.InitParams(ctx, model, sgd); err != nil { // declares the model
			t.Fatal(err)
		}
		before := readFloat32s(t, ctx, client, "w")
		grad := []float32{1, 2, 3, 4}
		pushOnce(t, ctx, client, "w", grad)
		want := make([]float32, len(grad))
		for i := range grad {
			want[i] = before[i] - grad[i]
		}
		expectFloat32s(t, "w after the push", readFloat32s(t, ctx, client, "w"), want)
	}
	// refusedAtConnect expects Connect to fail with this gRPC status and pserver-error-code.
	refusedAtConnect := func(t *testing.T, opts pserver.Options, code codes.Code, errorCode error) {
		opts.CallTimeout = 10 * time.Second
		client, err := pserver.Connect(ctx, opts)
		if client != nil {
			client.Close()
		}
		expectRefusal(t, err, code, errorCode)
	}

	t.Run("a trainer certificate pushes and pulls", func(t *testing.T) {
		pushAndPull(t, pserver.Options{Pservers: []string{byName}, TLS: certs.tls(t, "trainer", "")})
	})
	t.Run("a trainer token over TLS pushes and pulls", func(t *testing.T) {
		tlsOptions, token, err := pserver.LoadSecurity(pserver.SecurityFiles{
			CAFile: certs.path("ca.pem"), TokenFile: certs.tokenFile, ServerName: serverName,
		})
		if err != nil {
			t.Fatal(err)
		}
		if tlsOptions.Cert != nil || token == "" {
			t.Fatalf("LoadSecurity = %+v, %q: want a CA and a token only", tlsOptions, token)
		}
		pushAndPull(t, pserver.Options{Pservers: []string{byIP}, TLS: tlsOptions, Token: token})
	})
	t.Run("the server name is what the certificate is checked against", func(t *testing.T) {
		status := func(address string, options *pserver.TLSOptions) error {
			conn := dialSecure(t, address, options, "")
			callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err := pb.NewParameterServerClient(conn).GetShardStatus(callCtx, &pb.GetShardStatusRequest{})
			return err
		}
		// Dialled by IP, which the certificate does not name, the handshake fails...
		if err := status(byIP, certs.tls(t, "trainer", "")); pserver.FromError(err).Code != codes.Unavailable {
			t.Fatalf("GetShardStatus at %s without a server name: %v, want UNAVAILABLE", byIP, err)
		}
		// ...and the same dial with the server name gets an answer.
		if err := status(byIP, certs.tls(t, "trainer", serverName)); err != nil {
			t.Fatalf("GetShardStatus at %s as %s: %v", byIP, serverName, err)
		}
	})
	t.Run("a wrong token is refused unauthenticated", func(t *testing.T) {
		refusedAtConnect(t, pserver.Options{Pservers: []string{byName}, TLS: certs.tls(t, "", ""), Token: strings.Repeat("0", 64)},
			codes.Unauthenticated, pserver.ErrAuthUnauthenticated)
	})
	t.Run("a call without credentials is refused unauthenticated", func(t *testing.T) {
		refusedAtConnect(t, pserver.Options{Pservers: []string{byName}, TLS: certs.tls(t, "", "")},
			codes.Unauthenticated, pserver.ErrAuthUnauthenticated)
	})
	t.Run("a certificate of another CA is refused unauthenticated", func(t *testing.T) {
		outsider := certs.tls(t, "", "")
		outsider.Cert, outsider.Key = certs.read(t, "other-ca/outsider.pem"), certs.read(t, "other-ca/outsider.key")
		refusedAtConnect(t, pserver.Options{Pservers: []string{byName}, TLS: outsider},
			codes.Unauthenticated, pserver.ErrAuthUnauthenticated)
	})
	t.Run("only an admin may save a checkpoint", func(t *testing.T) {
		save := func(client string) (*pb.SaveCheckpointResponse, error) {
			callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			conn := dialSecure(t, byName, certs.tls(t, client, ""), "")
			var trailer metadata.MD
			reply, err := pb.NewParameterServerClient(conn).SaveCheckpoint(callCtx, &pb.SaveCheckpointRequest{}, grpc.Trailer(&trailer))
			if err != nil {
				return nil, pserver.FromError(err, trailer)
			}
			return reply, nil
		}
		_, err := save("trainer")
		expectRefusal(t, err, codes.PermissionDenied, pserver.ErrAuthPermissionDenied)
		saved, err := save("admin")
		if err != nil {
			t.Fatalf("SaveCheckpoint as admin: %v", err)
		}
		info, err := os.Stat(filepath.Join(certs.dir, "checkpoints", saved.GetMeta().GetPath()))
		if err != nil || saved.GetMeta().GetSize() == 0 || uint64(info.Size()) != saved.GetMeta().GetSize() {
			t.Fatalf("the checkpoint %+v on disk: %v (%v)", saved.GetMeta(), info, err)
		}
	})
	t.Run("a token without TLS is refused before dialling", func(t *testing.T) {
		token := strings.TrimSpace(string(certs.read(t, "trainer.token")))
		for _, opts := range []pserver.Options{
			{Pservers: []string{byName}, Token: token},
			{Master: []string{byName}, Token: token},
		} {
			client, err := pserver.Connect(ctx, opts)
			if client != nil {
				client.Close()
			}
			if !errors.Is(err, pserver.ErrClientInvalidSecurity) {
				t.Fatalf("Connect(%+v) = %v, want %s", opts, err, pserver.ErrClientInvalidSecurity)
			}
		}
	})
}

// expectRefusal expects err to be the client's *Error with this status and pserver-error-code
// (errorCode is its sentinel).
func expectRefusal(t *testing.T, err error, code codes.Code, errorCode error) {
	t.Helper()
	var e *pserver.Error
	if !errors.As(err, &e) || e.Code != code || !errors.Is(err, errorCode) || !pserver.IsRefused(e) {
		t.Fatalf("got %v, want %s (%s)", err, errorCode, code)
	}
}

// certificates are a test CA and certificates made by tools/certs/generate.sh (the script users
// run), a trainer token, and the pserver's --auth-config; the pserver's checkpoints go there too.
type certificates struct {
	dir       string
	tokenFile string
}

func makeCertificates(t *testing.T) *certificates {
	t.Helper()
	c := &certificates{dir: t.TempDir()}
	script := filepath.Join(repoRoot, "tools", "certs", "generate.sh")
	other := filepath.Join(c.dir, "other-ca")
	for _, args := range [][]string{
		{"ca", c.dir},
		{"server", c.dir, "server", "DNS:localhost,DNS:" + serverName},
		{"client", c.dir, "trainer", "trainers"},
		{"client", c.dir, "admin", "admins"},
		{"ca", other},
		{"client", other, "outsider", "trainers"},
	} {
		if out, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("generate.sh %v: %v\n%s", args, err, out)
		}
	}
	random := make([]byte, 32)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	c.tokenFile = c.path("trainer.token")
	config := `{"clientCertificates": [{"ou": "trainers", "role": "trainer"}, {"ou": "admins", "role": "admin"}],
  "tokens": [{"name": "ci", "file": "trainer.token", "role": "trainer"}]}`
	if err := os.WriteFile(c.tokenFile, []byte(hex.EncodeToString(random)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path("auth.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *certificates) path(name string) string { return filepath.Join(c.dir, name) }

func (c *certificates) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(c.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tls is TLSOptions with the test CA and, for "trainer" or "admin", that client certificate.
func (c *certificates) tls(t *testing.T, client, name string) *pserver.TLSOptions {
	o := &pserver.TLSOptions{CA: c.read(t, "ca.pem"), ServerName: name}
	if client != "" {
		o.Cert, o.Key = c.read(t, client+".pem"), c.read(t, client+".key")
	}
	return o
}

// dialSecure opens a raw connection with the client's dial options, closed when the test ends.
func dialSecure(t *testing.T, address string, options *pserver.TLSOptions, token string) *grpc.ClientConn {
	t.Helper()
	dialOptions, err := pserver.DialOptions(options, token)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.Dial(address, dialOptions...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// startSecurePserver starts a standalone pserver serving mutual TLS with the certificates'
// --auth-config, and returns its port.
func startSecurePserver(t *testing.T, c *certificates) string {
	t.Helper()
	return startPserver(t, c.path("pserver.log"), "--checkpoint-dir", c.path("checkpoints"),
		"--tls-cert", c.path("server.pem"), "--tls-key", c.path("server.key"),
		"--tls-client-ca", c.path("ca.pem"), "--auth-config", c.path("auth.json"))
}
