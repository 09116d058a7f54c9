package pserver

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestFromErrorReadsTheTrailers(t *testing.T) {
	err := status.Error(codes.Aborted, "stale")
	md := metadata.Pairs("pserver-error-code", "PSERVER_STALE_EPOCH", "pserver-shard-epoch", "12")
	e := FromError(err, md)
	if e.Code != codes.Aborted || e.ErrorCode != "PSERVER_STALE_EPOCH" || e.ShardEpoch != 12 || !e.Server {
		t.Fatalf("FromError = %+v", e)
	}
	if !IsStaleView(fmt.Errorf("wrapped: %w", e)) {
		t.Error("a stale epoch is a stale view, wrapped or not")
	}
	leader := FromError(status.Error(codes.Unavailable, "follower"), metadata.Pairs("pserver-error-code", "MASTER_NOT_LEADER", "pserver-leader", "10.0.0.3:8200"))
	if leader.Leader != "10.0.0.3:8200" {
		t.Errorf("leader = %q", leader.Leader)
	}
	if FromError(nil) != nil {
		t.Error("FromError(nil) must be nil")
	}
}

func TestRetryableMeansTheOutcomeIsUnknown(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{FromError(status.Error(codes.Unavailable, "connection refused")), true},
		{FromError(status.Error(codes.DeadlineExceeded, "deadline")), true},
		{FromError(status.Error(codes.ResourceExhausted, "busy"), metadata.Pairs("pserver-error-code", "PSERVER_OVERLOADED")), true},
		{FromError(status.Error(codes.Unavailable, "fenced"), metadata.Pairs("pserver-error-code", "PSERVER_FENCED")), false},
		{FromError(status.Error(codes.InvalidArgument, "bad")), false},
		{clientError(codes.Aborted, ErrStaleView, nil, "moved"), false},
		{errors.New("plain"), false},
	}
	for _, c := range cases {
		if got := isRetryable(c.err); got != c.want {
			t.Errorf("isRetryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestChangedShards(t *testing.T) {
	before := View{Shards: []ShardRoute{{0, "a", 1, true}, {1, "b", 2, true}, {2, "c", 3, true}}}
	after := View{Shards: []ShardRoute{{0, "a", 1, true}, {1, "d", 5, true}, {2, "c", 3, true}, {3, "e", 1, true}}}
	if got := fmt.Sprint(changedShards(before, after)); got != "[1 3]" {
		t.Errorf("changedShards = %s, want [1 3]", got)
	}
	if (View{ShardCount: 2, Shards: []ShardRoute{{0, "a", 1, true}, {1, "", 0, false}}}).Complete() {
		t.Error("a view with an unassigned shard is not complete")
	}
}
