package pserver

import (
	"sync"

	"google.golang.org/grpc"
)

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
	options := append([]grpc.DialOption{grpc.WithDefaultCallOptions(
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
