package pserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// errorRules is proto/testdata/error_codes.json, read as every client's tests read it.
type errorRules struct {
	Codes map[string]struct {
		Status *string `json:"status"`
		Action string  `json:"action"`
	} `json:"codes"`
	Statuses map[string]struct {
		WithoutCode string `json:"without_code"`
		UnknownCode string `json:"unknown_code"`
	} `json:"statuses"`
}

func loadErrorRules(t *testing.T) errorRules {
	t.Helper()
	raw, err := os.ReadFile("../../../proto/testdata/error_codes.json")
	if err != nil {
		t.Fatal(err)
	}
	var rules errorRules
	if err := json.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

// statusNamed is the gRPC status of a name as the rules spell it (CANCELLED, DEADLINE_EXCEEDED).
func statusNamed(t *testing.T, name string) codes.Code {
	t.Helper()
	var code codes.Code
	if err := code.UnmarshalJSON([]byte(strconv.Quote(name))); err != nil {
		t.Fatalf("status %s: %v", name, err)
	}
	return code
}

// checkAction checks that err's action is want, and that each predicate is true exactly for the
// actions it names.
func checkAction(t *testing.T, what string, err error, want string) {
	t.Helper()
	action := ClientActionOf(fmt.Errorf("wrapped: %w", err))
	if string(action) != want {
		t.Errorf("%s: action %q, want %q", what, action, want)
	}
	got := [5]bool{IsRetryable(err), IsStale(err), IsResendStep(err), IsShardUnavailable(err), IsRefused(err)}
	expected := [5]bool{want == "RETRY" || want == "BACK_OFF", want == "RERUN_STEP", want == "RESEND_PREVIOUS_STEP",
		want == "WAIT_FOR_SHARD", want == "REFUSED"}
	if got != expected {
		t.Errorf("%s (%s): retryable, stale, resend step, shard unavailable, refused = %v, want %v", what, want, got, expected)
	}
}

func TestTheRulesCoverEveryErrorCode(t *testing.T) {
	rules := loadErrorRules(t)
	for number, name := range pb.ErrorCode_name {
		if _, ok := rules.Codes[name]; !ok && number != 0 {
			t.Errorf("%s has no rule in error_codes.json", name)
		}
	}
	if len(rules.Codes) != len(pb.ErrorCode_name)-1 {
		t.Errorf("%d rules for %d codes", len(rules.Codes), len(pb.ErrorCode_name)-1)
	}
}

func TestTheActionOnEachCodeIsTheContracts(t *testing.T) {
	for name, rule := range loadErrorRules(t).Codes {
		code := pb.ErrorCode(pb.ErrorCode_value[name])
		if rule.Status == nil {
			checkAction(t, name, clientError(codes.Unknown, code, nil, "x"), rule.Action)
			continue
		}
		err := FromError(status.Error(statusNamed(t, *rule.Status), "x"), metadata.Pairs("pserver-error-code", name))
		checkAction(t, name, err, rule.Action)
	}
}

func TestTheActionOnAStatusWithoutACodeOrWithANewerOneIsTheContracts(t *testing.T) {
	for name, rule := range loadErrorRules(t).Statuses {
		bare := &Error{Code: statusNamed(t, name), Message: "x", Server: true}
		checkAction(t, name+" without a code", bare, rule.WithoutCode)
		newer := FromError(status.Error(statusNamed(t, name), "x"),
			metadata.Pairs("pserver-error-code", "PSERVER_NEWER_THAN_THIS_CLIENT"))
		checkAction(t, name+" with a newer code", newer, rule.UnknownCode)
	}
}

func TestAnErrorThatIsNotAnErrorOfTheClientHasNoAction(t *testing.T) {
	if action := ClientActionOf(errors.New("plain")); action != "" {
		t.Errorf("a plain error's action is %q", action)
	}
	if ClientActionOf(nil) != "" || IsRetryable(nil) {
		t.Error("nil has an action")
	}
}
