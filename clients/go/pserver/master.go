package pserver

import (
	"context"
	"sync"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// masterLink talks to the leading master among the replicas given. A follower answers
// UNAVAILABLE with the leader's address in the `pserver-leader` trailer: the link goes there. A
// replica that does not answer is skipped; the link tries the others, with a short backoff,
// until the call's deadline.
type masterLink struct {
	addresses []string
	timeout   time.Duration
	conns     *connPool

	mu      sync.Mutex
	current string
}

func newMasterLink(addresses []string, timeout time.Duration, conns *connPool) *masterLink {
	return &masterLink{addresses: addresses, timeout: timeout, conns: conns, current: addresses[0]}
}

// address is the replica the link talks to now.
func (m *masterLink) address() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// call runs one unary call on the leader, following redirects and skipping dead replicas.
func (m *masterLink) call(ctx context.Context, fn func(context.Context, pb.MasterClient, ...grpc.CallOption) error) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	var last error
	for attempt := 0; ctx.Err() == nil; attempt++ {
		conn, err := m.conns.get(m.address())
		if err != nil {
			return err
		}
		var trailer metadata.MD
		err = fn(ctx, pb.NewMasterClient(conn), grpc.Trailer(&trailer))
		if err == nil {
			return nil
		}
		e := FromError(err, trailer)
		if e.Code != codes.Unavailable || !e.Server {
			return e
		}
		last = e
		m.moveOn(e.Leader)
		if attempt > 0 {
			pause := time.Duration(50*attempt) * time.Millisecond
			if pause > 500*time.Millisecond {
				pause = 500 * time.Millisecond
			}
			if sleep(ctx, pause) != nil {
				break
			}
		}
	}
	return clientError(codes.Unavailable, pb.ErrorCode_CLIENT_NO_MASTER, last, "no master answered within %s (%v)", m.timeout, m.addresses)
}

// moveOn switches to the leader a follower named, or else to the next replica.
func (m *masterLink) moveOn(leader string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if leader != "" && leader != m.current {
		m.current = leader
		return
	}
	for i, a := range m.addresses {
		if a == m.current {
			m.current = m.addresses[(i+1)%len(m.addresses)]
			return
		}
	}
	m.current = m.addresses[0]
}

// watch streams cluster views from the leader to onView until ctx ends, reconnecting (and
// following the leader) whenever the stream ends.
func (m *masterLink) watch(ctx context.Context, onView func(*pb.ClusterView)) {
	for ctx.Err() == nil {
		if conn, err := m.conns.get(m.address()); err == nil {
			stream, err := pb.NewMasterClient(conn).WatchCluster(ctx, &pb.WatchClusterRequest{})
			for err == nil {
				var view *pb.ClusterView
				if view, err = stream.Recv(); err == nil {
					onView(view)
				}
			}
			if ctx.Err() == nil {
				var trailer metadata.MD
				if stream != nil {
					trailer = stream.Trailer()
				}
				m.moveOn(FromError(err, trailer).Leader)
			}
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
}

// sleep waits for d, or returns ctx's error when it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
