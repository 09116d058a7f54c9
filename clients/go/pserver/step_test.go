package pserver

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// statusOnly is a pserver that answers only GetShardStatus: serving, under epoch 3.
type statusOnly struct {
	pb.UnimplementedParameterServerServer
}

func (statusOnly) GetShardStatus(context.Context, *pb.GetShardStatusRequest) (*pb.GetShardStatusResponse, error) {
	return &pb.GetShardStatusResponse{ShardEpoch: 3}, nil
}

// standaloneClient connects to one in-process pserver on loopback.
func standaloneClient(t *testing.T, stepTimeout time.Duration) *Client {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	pb.RegisterParameterServerServer(server, statusOnly{})
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	c, err := Connect(context.Background(), Options{Pservers: []string{listener.Addr().String()}, StepTimeout: stepTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func staleView() error {
	return clientError(codes.Aborted, pb.ErrorCode_CLIENT_STALE_VIEW, nil, "shard 0 changed")
}

func TestAStepKeepsItsIdentityOnEveryRunAcrossARegistration(t *testing.T) {
	c := standaloneClient(t, time.Minute)
	c.mu.Lock()
	c.trainerID = 7
	c.mu.Unlock()
	var seen []*pb.RequestContext
	err := c.Step(context.Background(), func(s *StepContext) error {
		seen = append(seen, s.RequestContext(0))
		if len(seen) == 1 {
			// The session expired meanwhile: the client registered again under a new id.
			c.mu.Lock()
			c.trainerID = 99
			c.mu.Unlock()
			return staleView()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].GetTrainerId() != 7 || seen[1].GetTrainerId() != 7 ||
		seen[0].GetStep() != 1 || seen[1].GetStep() != 1 || seen[1].GetShardEpoch() != 3 {
		t.Fatalf("the runs of one step carried %v", seen)
	}
	err = c.Step(context.Background(), func(s *StepContext) error {
		seen = append(seen, s.RequestContext(0))
		return nil
	})
	if err != nil || seen[2].GetTrainerId() != 99 || seen[2].GetStep() != 2 {
		t.Fatalf("the next step carried %v (%v)", seen[2], err)
	}
}

func TestAStepFailsOnlyWhenItsDeadlinePasses(t *testing.T) {
	c := standaloneClient(t, 400*time.Millisecond)
	started := time.Now()
	runs := 0
	err := c.Step(context.Background(), func(s *StepContext) error {
		runs++
		return staleView()
	})
	if !errors.Is(err, ErrClientStepFailed) {
		t.Fatalf("got %v, want %s", err, ErrClientStepFailed)
	}
	if elapsed := time.Since(started); elapsed < 390*time.Millisecond || runs < 2 {
		t.Fatalf("failed after %s and %d runs", elapsed, runs)
	}
}

func TestShardUnavailableIsWaitedForNotAStaleView(t *testing.T) {
	for _, code := range []pb.ErrorCode{pb.ErrorCode_PSERVER_NOT_SERVING, pb.ErrorCode_PSERVER_FENCED, pb.ErrorCode_PSERVER_SHUTTING_DOWN} {
		err := &Error{Server: true, Code: codes.Unavailable, ErrorCode: code}
		if IsStale(err) || !IsShardUnavailable(err) || IsRetryable(err) {
			t.Errorf("%s: stale %v, unavailable %v, retryable %v", code, IsStale(err), IsShardUnavailable(err), IsRetryable(err))
		}
	}
	wrong := &Error{Server: true, Code: codes.FailedPrecondition, ErrorCode: pb.ErrorCode_PSERVER_WRONG_SHARD}
	if !IsStale(wrong) || IsShardUnavailable(wrong) {
		t.Error("PSERVER_WRONG_SHARD is a stale view")
	}
}
