package pserver

import (
	"sync"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/keepalive"
)

// reconnect is how soon a connection dials again after its server went away. gRPC's default
// waits 1 s, then 1.6x more each time, up to 120 s; from 200 ms up to 1 s, a trainer notices a
// server that is back within about a second.
var reconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           grpcbackoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
})

// pings are keepalive pings while calls are open: a connection whose peer went silent (a
// black-holed route, a host gone without a reset) fails within Time + Timeout and its calls are
// retried on a new one, instead of each waiting out its deadline on a connection that still looks
// ready. grpc-go pings at most every 10 s (a shorter Time is raised to it).
var pings = grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second})

// connPool keeps one gRPC connection per address, dialled lazily; gRPC reconnects on its own.
// Every connection carries the client's security (DialOptions).
type connPool struct {
	maxMessageBytes int
	security        []grpc.DialOption

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newConnPool(maxMessageBytes int, security []grpc.DialOption) *connPool {
	return &connPool{maxMessageBytes: maxMessageBytes, security: security, conns: map[string]*grpc.ClientConn{}}
}

func (p *connPool) get(address string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if conn, ok := p.conns[address]; ok {
		return conn, nil
	}
	options := append([]grpc.DialOption{reconnect, pings, grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(p.maxMessageBytes), grpc.MaxCallSendMsgSize(p.maxMessageBytes))}, p.security...)
	conn, err := grpc.Dial(address, options...)
	if err != nil {
		return nil, err
	}
	p.conns[address] = conn
	return conn, nil
}

func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for address, conn := range p.conns {
		_ = conn.Close()
		delete(p.conns, address)
	}
}
