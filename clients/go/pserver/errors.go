package pserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Error is every error the client returns for a failed call or a condition of its own. Callers
// branch on ErrorCode (the server's `pserver-error-code` trailer, or a CLIENT_* code of the
// contract's enum) with errors.Is and the sentinels (errors.Is(err, ErrStaleEpoch)), or with the
// predicates IsRetryable, IsStale, IsRefused and IsShardUnavailable; never on the message.
type Error struct {
	// Code is the gRPC status of a server error; for the client's own errors a close match.
	Code codes.Code
	// ErrorCode is the domain code: the `pserver-error-code` trailer, or a CLIENT_* code.
	// ERROR_CODE_UNSPECIFIED when the status came without one (from gRPC itself, a proxy).
	ErrorCode pb.ErrorCode
	Message   string
	// ShardEpoch is the shard's current epoch from the `pserver-shard-epoch` trailer (ABORTED).
	ShardEpoch uint64
	// Leader is the master leader's address from the `pserver-leader` trailer (UNAVAILABLE).
	Leader string
	// RetryAfterMs is the server's hint from `pserver-retry-after-ms` (RESOURCE_EXHAUSTED).
	RetryAfterMs uint64
	// Server is true when the error came from a server (a gRPC status), false for the client's own.
	Server bool
	// codeName is the trailer as sent: a code newer than this client's enum leaves ErrorCode
	// unspecified, yet it is a domain code.
	codeName string
	cause    error
}

func (e *Error) Error() string {
	if name := e.codeText(); name != "" {
		return fmt.Sprintf("%s (%s): %s", name, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// codeText is the domain code's name, "" without one.
func (e *Error) codeText() string {
	if e.ErrorCode != pb.ErrorCode_ERROR_CODE_UNSPECIFIED {
		return e.ErrorCode.String()
	}
	return e.codeName
}

// hasDomainCode reports whether the error carries a domain code, known to this client or not.
func (e *Error) hasDomainCode() bool { return e.codeText() != "" }

// Unwrap gives the cause of a client error (the last server error of a failed step, say).
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is the sentinel of e's ErrorCode (ErrStaleEpoch for
// PSERVER_STALE_EPOCH, …), so that errors.Is(err, ErrStaleEpoch) finds the code anywhere in a
// chain of wrapped errors.
func (e *Error) Is(target error) bool {
	s, ok := target.(sentinel)
	return ok && e.ErrorCode != pb.ErrorCode_ERROR_CODE_UNSPECIFIED && pb.ErrorCode(s) == e.ErrorCode
}

// sentinel is the error value of one ErrorCode (error_codes.go declares one per code); an *Error
// matches it by code (Error.Is).
type sentinel pb.ErrorCode

func (s sentinel) Error() string { return pb.ErrorCode(s).String() }

// Sentinel is the sentinel error of code, for code-driven checks: errors.Is(err,
// Sentinel(pb.ErrorCode_PSERVER_STALE_EPOCH)) is errors.Is(err, ErrStaleEpoch).
func Sentinel(code pb.ErrorCode) error { return sentinel(code) }

func clientError(code codes.Code, errorCode pb.ErrorCode, cause error, format string, args ...interface{}) *Error {
	return &Error{Code: code, ErrorCode: errorCode, Message: fmt.Sprintf(format, args...), cause: cause}
}

// FromError converts an error of a gRPC call (made by this package or by the raw stubs in
// pserverpb) into an *Error, reading the facts from the call's trailers: pass
// grpc.Trailer(&md) to a raw call and give md here. An *Error is returned as is; nil stays nil.
func FromError(err error, trailers ...metadata.MD) *Error {
	if err == nil {
		return nil
	}
	var typed *Error
	if errors.As(err, &typed) {
		return typed
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: codes.DeadlineExceeded, Message: err.Error(), cause: err}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: codes.Canceled, Message: err.Error(), cause: err}
	}
	st, _ := status.FromError(err)
	out := &Error{Code: st.Code(), Message: st.Message(), Server: true, cause: err}
	md := metadata.Join(trailers...)
	if v := md.Get("pserver-error-code"); len(v) > 0 {
		out.codeName = v[0]
		out.ErrorCode = pb.ErrorCode(pb.ErrorCode_value[v[0]])
	}
	if v := md.Get("pserver-leader"); len(v) > 0 {
		out.Leader = v[0]
	}
	if v := md.Get("pserver-shard-epoch"); len(v) > 0 {
		out.ShardEpoch, _ = strconv.ParseUint(v[0], 10, 64)
	}
	if v := md.Get("pserver-retry-after-ms"); len(v) > 0 {
		out.RetryAfterMs, _ = strconv.ParseUint(v[0], 10, 64)
	}
	if out.Code == codes.ResourceExhausted && !out.hasDomainCode() {
		// gRPC's own: a message over a size limit, on this side or the server's. Sending it
		// again changes nothing, so it is not retried like a busy server.
		return &Error{Code: codes.ResourceExhausted, ErrorCode: pb.ErrorCode_CLIENT_MESSAGE_TOO_LARGE, cause: err,
			Message: fmt.Sprintf("a message over gRPC's size limit (%s): raise Options.MaxMessageBytes and the server's "+
				"--max-message-mb, or lower the block size so that every block fits in a message", st.Message())}
	}
	return out
}

// IsStale reports whether err means the view a step was computed under is stale: the shard's
// epoch moved (ABORTED, PSERVER_STALE_EPOCH), the pserver at that address serves another index
// (PSERVER_WRONG_SHARD), or the client ended the step when a new view came (CLIENT_STALE_VIEW).
// Step then runs the step again with the same identity.
func IsStale(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if !e.Server {
		return e.ErrorCode == pb.ErrorCode_CLIENT_STALE_VIEW
	}
	return e.Code == codes.Aborted || e.ErrorCode == pb.ErrorCode_PSERVER_WRONG_SHARD
}

// IsShardUnavailable reports whether the shard is not served at that address right now: its
// pserver is recovering it (PSERVER_NOT_SERVING), was fenced (PSERVER_FENCED) or is shutting
// down (PSERVER_SHUTTING_DOWN), and nothing was applied. Step retries the call after a backoff:
// either the pserver starts serving (same epoch) or the master publishes a new assignment, which
// ends the step's context. Not a new view in itself.
func IsShardUnavailable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || !e.Server {
		return false
	}
	switch e.ErrorCode {
	case pb.ErrorCode_PSERVER_NOT_SERVING, pb.ErrorCode_PSERVER_FENCED, pb.ErrorCode_PSERVER_SHUTTING_DOWN:
		return true
	}
	return false
}

// IsRefused reports whether a server refused the caller: UNAUTHENTICATED (no verified client
// certificate and no valid token; `AUTH_UNAUTHENTICATED`) or PERMISSION_DENIED (the caller's role
// may not call the method; `AUTH_PERMISSION_DENIED`). Waiting does not change that answer, so the
// client returns it rather than waiting for a shard to come up.
func IsRefused(err error) bool {
	var e *Error
	if !errors.As(err, &e) || !e.Server {
		return false
	}
	return e.Code == codes.Unauthenticated || e.Code == codes.PermissionDenied
}

// IsRetryable reports whether a server call's outcome is unknown (it may or may not have been
// applied) or the trouble is transient, so the same call may be sent again: UNAVAILABLE,
// DEADLINE_EXCEEDED, CANCELLED or INTERNAL without a domain code (a domain code is the server's
// considered answer; DEADLINE_EXCEEDED and CANCELLED are the codes of those statuses), and
// RESOURCE_EXHAUSTED only with a domain code (PSERVER_OVERLOADED, CHECKPOINT_NO_SPACE: wait for
// `pserver-retry-after-ms`; not PSERVER_TABLE_FULL, which waiting does not change). gRPC's own RESOURCE_EXHAUSTED, without a code, is a message over
// the size limit: CLIENT_MESSAGE_TOO_LARGE, not retryable.
func IsRetryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || !e.Server {
		return false
	}
	if e.Code == codes.ResourceExhausted {
		return e.hasDomainCode() && e.ErrorCode != pb.ErrorCode_PSERVER_TABLE_FULL
	}
	if e.hasDomainCode() && e.ErrorCode != pb.ErrorCode_DEADLINE_EXCEEDED && e.ErrorCode != pb.ErrorCode_CANCELLED {
		return false
	}
	switch e.Code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal:
		return true
	}
	return false
}
