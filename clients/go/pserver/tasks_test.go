package pserver

import (
	"regexp"
	"testing"
)

func TestNewRequestIDIs128RandomBitsInHex(t *testing.T) {
	a, b := newRequestID(), newRequestID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) {
		t.Fatalf("request id %q, want 32 hex digits", a)
	}
	if a == b {
		t.Fatalf("two request ids are both %q", a)
	}
}
