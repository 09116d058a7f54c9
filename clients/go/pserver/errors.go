package pserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Error codes of the client itself (Error.ErrorCode); server codes come from the
// `pserver-error-code` trailer.
const (
	ErrStaleView        = "CLIENT_STALE_VIEW"
	ErrNoMaster         = "CLIENT_NO_MASTER"
	ErrStepFailed       = "CLIENT_STEP_FAILED"
	ErrDeadlineExceeded = "CLIENT_DEADLINE_EXCEEDED"
	ErrClosed           = "CLIENT_CLOSED"
	ErrUnknownTensor    = "CLIENT_UNKNOWN_TENSOR"
	ErrNotAFileTask     = "CLIENT_NOT_A_FILE_TASK"
	// ErrInvalidSecurity: TLS and token options that cannot work (a token without TLS, a
	// certificate without its key, a file that cannot be read). Nothing was dialled.
	ErrInvalidSecurity = "CLIENT_INVALID_SECURITY"
)

// Error is every error the client returns for a failed call or a condition of its own. Callers
// branch on ErrorCode (the server's `pserver-error-code` trailer, or a CLIENT_* code), never on
// the message.
type Error struct {
	// Code is the gRPC status of a server error; for the client's own errors a close match.
	Code codes.Code
	// ErrorCode is the domain code: the `pserver-error-code` trailer, or a CLIENT_* constant.
	ErrorCode string
	Message   string
	// ShardEpoch is the shard's current epoch from the `pserver-shard-epoch` trailer (ABORTED).
	ShardEpoch uint64
	// Leader is the master leader's address from the `pserver-leader` trailer (UNAVAILABLE).
	Leader string
	// RetryAfterMs is the server's hint from `pserver-retry-after-ms` (RESOURCE_EXHAUSTED).
	RetryAfterMs uint64
	// Server is true when the error came from a server (a gRPC status), false for the client's own.
	Server bool
	cause  error
}

func (e *Error) Error() string {
	if e.ErrorCode != "" {
		return fmt.Sprintf("%s (%s): %s", e.ErrorCode, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap gives the cause of a client error (the last server error of a failed step, say).
func (e *Error) Unwrap() error { return e.cause }

func clientError(code codes.Code, errorCode string, cause error, format string, args ...interface{}) *Error {
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
		out.ErrorCode = v[0]
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
	return out
}

// IsStaleView reports whether err means the view a step was computed under is stale: the
// shard's epoch moved (ABORTED), the pserver at that address serves another index, or the client
// ended the step when a new view came. Step then runs the step again with the same identity.
func IsStaleView(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if !e.Server {
		return e.ErrorCode == ErrStaleView
	}
	return e.Code == codes.Aborted || e.ErrorCode == "PSERVER_WRONG_SHARD"
}

// isShardUnavailable reports whether the shard is not served at that address right now: its
// pserver is recovering it, was fenced or is shutting down, and nothing was applied. The call is
// retried after a backoff: either the pserver starts serving (same epoch) or the master publishes
// a new assignment, which ends the step's context. Not a new view in itself.
func isShardUnavailable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || !e.Server {
		return false
	}
	switch e.ErrorCode {
	case "PSERVER_NOT_SERVING", "PSERVER_FENCED", "PSERVER_SHUTTING_DOWN":
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

// isRetryable reports whether a call's outcome is unknown (it may or may not have been applied),
// or the server asked to be called again later: the call is retried as is.
func isRetryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || !e.Server {
		return false
	}
	if e.Code == codes.ResourceExhausted {
		return true
	}
	// A domain code is the server's considered answer, not an unknown outcome.
	if e.ErrorCode != "" && e.ErrorCode != "DEADLINE_EXCEEDED" && e.ErrorCode != "CANCELLED" {
		return false
	}
	switch e.Code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal:
		return true
	}
	return false
}
