package pserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"unicode"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
)

// TLSOptions say how the client checks the masters' and pservers' certificates and, with Cert
// and Key, proves itself to them (mutual TLS). Options.TLS nil dials plaintext.
type TLSOptions struct {
	// CA is the PEM of the CA that signed the servers' certificates; the system's roots when nil.
	CA []byte
	// Cert is a client certificate chain (PEM), for servers that verify clients; Key its key.
	Cert []byte
	Key  []byte
	// ServerName is the name the servers' certificates carry when it is not the host dialled (a
	// pserver reached by IP whose certificate names pserver-0.ml.svc). It is also sent as the
	// calls' authority.
	ServerName string
}

// SecurityFiles names the files LoadSecurity reads; empty fields are not read.
type SecurityFiles struct {
	CAFile     string
	CertFile   string
	KeyFile    string
	TokenFile  string
	ServerName string
}

// LoadSecurity reads the files into Options.TLS and Options.Token:
//
//	opts.TLS, opts.Token, err = pserver.LoadSecurity(pserver.SecurityFiles{CAFile: "ca.pem", TokenFile: "trainer.token"})
//
// TLS is nil unless a CA, certificate, key or server name is given; the token is the file's
// content with surrounding whitespace trimmed. A file that cannot be read is an *Error
// (ErrClientInvalidSecurity) naming it.
func LoadSecurity(files SecurityFiles) (*TLSOptions, string, error) {
	read := func(what, path string) ([]byte, error) {
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, err, "%s %s: %v", what, path, err)
		}
		return b, nil
	}
	var out *TLSOptions
	if files.CAFile != "" || files.CertFile != "" || files.KeyFile != "" || files.ServerName != "" {
		out = &TLSOptions{ServerName: files.ServerName}
		var err error
		if out.CA, err = read("CA", files.CAFile); err != nil {
			return nil, "", err
		}
		if out.Cert, err = read("certificate", files.CertFile); err != nil {
			return nil, "", err
		}
		if out.Key, err = read("key", files.KeyFile); err != nil {
			return nil, "", err
		}
	}
	token, err := read("token", files.TokenFile)
	if err != nil {
		return nil, "", err
	}
	return out, strings.TrimSpace(string(token)), nil
}

// DialOptions are the gRPC dial options of these security settings: the client dials every
// master and pserver with them, and raw stubs (pserverpb) can too. A token needs TLS: a token
// sent in plaintext can be read off the network and replayed, so it is refused (ErrClientInvalidSecurity)
// before anything is dialled.
func DialOptions(options *TLSOptions, token string) ([]grpc.DialOption, error) {
	token = strings.TrimSpace(token)
	if token != "" && options == nil {
		return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, nil,
			"a bearer token needs TLS: set TLS too (a token sent in plaintext can be read and replayed)")
	}
	if strings.IndexFunc(token, unicode.IsSpace) >= 0 {
		return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, nil, "the bearer token contains whitespace")
	}
	if options == nil {
		return []grpc.DialOption{grpc.WithInsecure()}, nil
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: options.ServerName}
	if options.CA != nil {
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(options.CA) {
			return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, nil, "TLS.CA: no PEM certificate in it")
		}
	}
	if (options.Cert == nil) != (options.Key == nil) {
		return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, nil, "TLS.Cert and TLS.Key go together (mutual TLS needs both)")
	}
	if options.Cert != nil {
		pair, err := tls.X509KeyPair(options.Cert, options.Key)
		if err != nil {
			return nil, clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_INVALID_SECURITY, err, "TLS.Cert and TLS.Key: %v", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(config))}
	if options.ServerName != "" {
		dial = append(dial, grpc.WithAuthority(options.ServerName))
	}
	if token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearerToken(token)))
	}
	return dial, nil
}

// bearerToken sends `authorization: Bearer <token>` with every call, over TLS only.
type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return true }
