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
// contract's enum) with errors.Is and the sentinels (errors.Is(err, ErrStaleEpoch)), or with
// ClientActionOf and the predicates IsRetryable, IsStale, IsRefused, IsShardUnavailable and
// IsResendStep; never on the message.
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

// ClientAction is what a client does on an error, by the contract's rules
// (proto/testdata/error_codes.json, generated into error_rules.go): ActionRetry, ActionBackOff,
// ActionWaitForShard, ActionRerunStep, ActionResendPreviousStep, ActionFollowLeader, ActionRefused
// or ActionFail, whose comments say what each means.
type ClientAction string

// statusRule is a gRPC status's actions: on an error without a domain code, and on one with a
// code newer than this client.
type statusRule struct{ withoutCode, unknownCode ClientAction }

// ClientActionOf is the contract's action on err: by its code when this client knows it, else by
// its gRPC status, without a code or with one newer than this client. "" for an error that is
// not an *Error.
func ClientActionOf(err error) ClientAction {
	var e *Error
	if !errors.As(err, &e) {
		return ""
	}
	if !e.Server {
		if action, ok := codeActions[e.ErrorCode]; ok {
			return action
		}
		return ActionFail
	}
	rule, ok := statusActions[e.Code]
	if !ok {
		rule = statusRule{ActionFail, ActionFail}
	}
	if !e.hasDomainCode() {
		return rule.withoutCode
	}
	if action, ok := codeActions[e.ErrorCode]; ok {
		return action
	}
	return rule.unknownCode
}

// IsStale reports whether the contract's action on err is ActionRerunStep: the step's view is
// stale.
func IsStale(err error) bool { return ClientActionOf(err) == ActionRerunStep }

// IsResendStep reports whether the contract's action on err is ActionResendPreviousStep
// (PSERVER_RESEND_STEP).
func IsResendStep(err error) bool { return ClientActionOf(err) == ActionResendPreviousStep }

// IsShardUnavailable reports whether the contract's action on err is ActionWaitForShard: nothing
// was applied.
func IsShardUnavailable(err error) bool { return ClientActionOf(err) == ActionWaitForShard }

// IsRefused reports whether the contract's action on err is ActionRefused: returned at once,
// never waited out.
func IsRefused(err error) bool { return ClientActionOf(err) == ActionRefused }

// IsRetryable reports whether the contract's action on err is ActionRetry or ActionBackOff: the
// same call is sent again (after RetryAfterMs when the server gave it).
func IsRetryable(err error) bool {
	action := ClientActionOf(err)
	return action == ActionRetry || action == ActionBackOff
}
