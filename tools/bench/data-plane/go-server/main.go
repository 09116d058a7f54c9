// Command go-server is the data-plane benchmark's Go reference: a minimal parameter server
// written the plain grpc-go way, speaking the subset of pserver.v1.ParameterServer a trainer's
// data plane uses, so that the pserver can be measured next to it with one driver.
//
//   - InitParam: float32 tensors with plain SGD at the request's learning rate, until
//     FinishInitParams. GetShardStatus says shard 0 of 1, the epoch and whether it is initialized.
//   - SendGrads: every gradient of the request is checked (known name, float32, same length),
//     then w -= lr*g is applied to each tensor under that tensor's mutex. A (trainer, step) not
//     above the trainer's last applied step is acknowledged PUSH_OUTCOME_DUPLICATE, not applied.
//   - SendGradsStream: the pieces are copied into one buffer per tensor and applied, as a unary
//     push, when the client half-closes.
//   - GetParams: a copy of each tensor taken under its mutex.
//
// Gradient bytes are reinterpreted in place as []float32 when the host is little-endian and the
// buffer 4-byte aligned (no copy), and decoded with encoding/binary otherwise. No checkpoints, no
// tables, no access control: optional mutual TLS only.
//
// Built offline in GOPATH mode against Debian's Go sources by the benchmark (see README.md).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"unsafe"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

const (
	maxMessageBytes = 256 << 20
	// The epoch a standalone shard that never restarts keeps; trainers read it with GetShardStatus.
	shardEpoch  = 1
	float32Type = pb.ElementType_ELEMENT_TYPE_FLOAT32
)

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

type tensor struct {
	mu    sync.Mutex
	w     []float32
	lr    float32
	shape []uint64
}

type server struct {
	pb.UnimplementedParameterServerServer

	mu          sync.RWMutex
	tensors     map[string]*tensor
	initialized bool

	marksMu sync.Mutex
	marks   map[uint64]uint64 // trainer id -> last applied step
}

// update is one checked gradient, ready to apply.
type update struct {
	t *tensor
	g []float32
}

func newServer() *server {
	return &server{tensors: map[string]*tensor{}, marks: map[uint64]uint64{}}
}

// asFloat32 views b as little-endian float32 values: in place when it can, else a decoded copy.
func asFloat32(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// toBytes copies w into a new little-endian byte slice.
func toBytes(w []float32) []byte {
	out := make([]byte, 4*len(w))
	if littleEndian && len(w) > 0 {
		copy(out, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(out)))
		return out
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func sgd(w, g []float32, lr float32) {
	g = g[:len(w)] // one bounds check, none in the loop
	for i := range w {
		w[i] -= lr * g[i]
	}
}

// checkEpoch refuses a request made under another view of the shard; 0 passes where allowed.
func checkEpoch(c *pb.RequestContext, zeroAllowed bool) error {
	epoch := c.GetShardEpoch()
	if epoch == shardEpoch || (epoch == 0 && zeroAllowed) {
		return nil
	}
	return status.Errorf(codes.Aborted, "shard epoch %d, the shard's is %d", epoch, shardEpoch)
}

func (s *server) lookup(name string) (*tensor, error) {
	s.mu.RLock()
	t := s.tensors[name]
	s.mu.RUnlock()
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "unknown tensor %q", name)
	}
	return t, nil
}

// sgdRate is the learning rate of a plain SGD config; any other rule or option is refused.
func sgdRate(name string, opt *pb.OptimizerConfig) (float32, error) {
	sgdConfig, lr := opt.GetSgd(), opt.GetLearningRate()
	if lr == nil || lr.Base == nil { // also when opt is nil, so opt is not nil below
		return 0, status.Errorf(codes.InvalidArgument, "%s: optimizer.learning_rate.base is required", name)
	}
	plain := (opt.GetAlgorithm() == nil || sgdConfig != nil) &&
		sgdConfig.GetMomentum() == 0 && sgdConfig.GetWeightDecay() == 0 &&
		opt.ClipValue == nil && opt.ClipNorm == nil &&
		(lr.GetPolicy() == nil || lr.GetConstant() != nil)
	if !plain {
		return 0, status.Errorf(codes.InvalidArgument, "%s: only plain SGD at a constant rate is served", name)
	}
	return float32(*lr.Base), nil
}

func (s *server) InitParam(_ context.Context, req *pb.InitParamRequest) (*pb.InitParamResponse, error) {
	if err := checkEpoch(req.GetContext(), true); err != nil {
		return nil, err
	}
	p := req.GetParam()
	if p.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "param.name is empty")
	}
	if p.GetElementType() != float32Type || len(p.GetContent())%4 != 0 {
		return nil, status.Errorf(codes.InvalidArgument, "%s: only float32 tensors are served", p.GetName())
	}
	lr, err := sgdRate(p.GetName(), req.GetOptimizer())
	if err != nil {
		return nil, err
	}
	w := make([]float32, len(p.GetContent())/4)
	copy(w, asFloat32(p.GetContent())) // own the storage: the request's buffer is not ours to keep
	t := &tensor{w: w, lr: lr, shape: p.GetShape()}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initialized {
		return nil, status.Error(codes.FailedPrecondition, "the shard is already initialized")
	}
	s.tensors[p.GetName()] = t
	return &pb.InitParamResponse{ShardEpoch: shardEpoch}, nil
}

func (s *server) FinishInitParams(_ context.Context, req *pb.FinishInitParamsRequest) (*pb.FinishInitParamsResponse, error) {
	if err := checkEpoch(req.GetContext(), true); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initialized {
		return nil, status.Error(codes.FailedPrecondition, "the shard is already initialized")
	}
	s.initialized = true
	return &pb.FinishInitParamsResponse{ShardEpoch: shardEpoch}, nil
}

func (s *server) GetShardStatus(context.Context, *pb.GetShardStatusRequest) (*pb.GetShardStatusResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &pb.GetShardStatusResponse{
		Index:       0,
		ShardCount:  1,
		ShardEpoch:  shardEpoch,
		Mode:        pb.ShardMode_SHARD_MODE_STANDALONE,
		Initialized: s.initialized,
	}, nil
}

// checkPush refuses a push without a trainer and step, under another epoch, or before init.
func (s *server) checkPush(c *pb.RequestContext) error {
	if c.GetTrainerId() == 0 || c.GetStep() == 0 {
		return status.Error(codes.InvalidArgument, "a push needs context.trainer_id and context.step")
	}
	if err := checkEpoch(c, false); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.initialized {
		return status.Error(codes.FailedPrecondition, "the shard is not initialized")
	}
	return nil
}

// gradientTensor is the tensor a gradient of `name` and `elementType` updates.
func (s *server) gradientTensor(name string, elementType pb.ElementType) (*tensor, error) {
	t, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	if elementType != float32Type {
		return nil, status.Errorf(codes.InvalidArgument, "%s: gradient is %v, the tensor float32", name, elementType)
	}
	return t, nil
}

// apply applies checked updates once per (trainer, step). The step mark is taken before the
// updates run: a trainer keeps one push in flight per shard, so nothing can observe the gap.
func (s *server) apply(c *pb.RequestContext, updates []update) *pb.SendGradsResponse {
	s.marksMu.Lock()
	last := s.marks[c.GetTrainerId()]
	if c.GetStep() <= last {
		s.marksMu.Unlock()
		return &pb.SendGradsResponse{ShardEpoch: shardEpoch, Outcome: pb.PushOutcome_PUSH_OUTCOME_DUPLICATE, LastAppliedStep: last}
	}
	s.marks[c.GetTrainerId()] = c.GetStep()
	s.marksMu.Unlock()

	for _, u := range updates {
		u.t.mu.Lock()
		sgd(u.t.w, u.g, u.t.lr)
		u.t.mu.Unlock()
	}
	return &pb.SendGradsResponse{ShardEpoch: shardEpoch, Outcome: pb.PushOutcome_PUSH_OUTCOME_APPLIED, LastAppliedStep: c.GetStep()}
}

func (s *server) SendGrads(_ context.Context, req *pb.SendGradsRequest) (*pb.SendGradsResponse, error) {
	if err := s.checkPush(req.GetContext()); err != nil {
		return nil, err
	}
	if len(req.GetSparse()) > 0 {
		return nil, status.Error(codes.Unimplemented, "tables are not served")
	}
	updates := make([]update, 0, len(req.GetGrads()))
	seen := make(map[string]bool, len(req.GetGrads()))
	for _, g := range req.GetGrads() {
		t, err := s.gradientTensor(g.GetName(), g.GetElementType())
		if err != nil {
			return nil, err
		}
		if seen[g.GetName()] {
			return nil, status.Errorf(codes.InvalidArgument, "%s: gradient given twice", g.GetName())
		}
		seen[g.GetName()] = true
		if len(g.GetContent()) != 4*len(t.w) {
			return nil, status.Errorf(codes.InvalidArgument, "%s: gradient has %d bytes, the tensor %d",
				g.GetName(), len(g.GetContent()), 4*len(t.w))
		}
		updates = append(updates, update{t: t, g: asFloat32(g.GetContent())})
	}
	return s.apply(req.GetContext(), updates), nil
}

// staged is one gradient of a stream, filled piece by piece.
type staged struct {
	t    *tensor
	buf  []byte
	fill int
}

func (s *server) SendGradsStream(stream pb.ParameterServer_SendGradsStreamServer) error {
	var c *pb.RequestContext
	var order []*staged
	byName := map[string]*staged{}
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err // broken off: nothing was applied
		}
		if c == nil {
			if c = chunk.GetContext(); c == nil {
				return status.Error(codes.InvalidArgument, "the stream's first message has no context")
			}
			if err := s.checkPush(c); err != nil {
				return err
			}
		}
		if len(chunk.GetSparse()) > 0 {
			return status.Error(codes.Unimplemented, "tables are not served")
		}
		for _, piece := range chunk.GetGrads() {
			st := byName[piece.GetName()]
			if st == nil {
				t, err := s.gradientTensor(piece.GetName(), piece.GetElementType())
				if err != nil {
					return err
				}
				st = &staged{t: t, buf: make([]byte, 4*len(t.w))}
				byName[piece.GetName()] = st
				order = append(order, st)
			}
			if piece.GetOffset() != uint64(st.fill) || st.fill+len(piece.GetContent()) > len(st.buf) {
				return status.Errorf(codes.InvalidArgument, "%s: piece of %d bytes at offset %d, %d of %d bytes received",
					piece.GetName(), len(piece.GetContent()), piece.GetOffset(), st.fill, len(st.buf))
			}
			st.fill += copy(st.buf[st.fill:], piece.GetContent())
		}
	}
	if c == nil {
		return status.Error(codes.InvalidArgument, "empty stream")
	}
	updates := make([]update, 0, len(order))
	for _, st := range order {
		if st.fill != len(st.buf) {
			return status.Errorf(codes.InvalidArgument, "incomplete gradient: %d of %d bytes", st.fill, len(st.buf))
		}
		updates = append(updates, update{t: st.t, g: asFloat32(st.buf)})
	}
	return stream.SendAndClose(s.apply(c, updates))
}

func (s *server) GetParams(_ context.Context, req *pb.GetParamsRequest) (*pb.GetParamsResponse, error) {
	if err := checkEpoch(req.GetContext(), true); err != nil {
		return nil, err
	}
	out := make([]*pb.Tensor, 0, len(req.GetNames()))
	for _, name := range req.GetNames() {
		t, err := s.lookup(name)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		content := toBytes(t.w) // a snapshot: the reply is marshalled after we return
		t.mu.Unlock()
		out = append(out, &pb.Tensor{Name: name, ElementType: float32Type, Shape: t.shape, Content: content})
	}
	return &pb.GetParamsResponse{ShardEpoch: shardEpoch, Params: out}, nil
}

// mutualTLS serves TLS with the given certificate; with a client CA, clients must present a
// certificate it signed.
func mutualTLS(certFile, keyFile, clientCAFile string) (credentials.TransportCredentials, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", clientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(cfg), nil
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "TCP port (0: a free one, printed)")
	windowMiB := flag.Int("window-mb", 32, "HTTP/2 flow-control window per stream and per connection, MiB (0: grpc-go's dynamic window)")
	certFile := flag.String("tls-cert", "", "serve TLS with this certificate (PEM)")
	keyFile := flag.String("tls-key", "", "the certificate's key (PEM)")
	clientCAFile := flag.String("tls-client-ca", "", "require client certificates signed by this CA (PEM)")
	flag.Parse()

	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(maxMessageBytes), grpc.MaxSendMsgSize(maxMessageBytes)}
	if *windowMiB > 0 {
		window := int32(*windowMiB) << 20
		opts = append(opts, grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window))
	}
	if *certFile != "" {
		creds, err := mutualTLS(*certFile, *keyFile, *clientCAFile)
		if err != nil {
			log.Fatalf("tls: %v", err)
		}
		opts = append(opts, grpc.Creds(creds))
	}

	lis, err := net.Listen("tcp", net.JoinHostPort(*host, fmt.Sprint(*port)))
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	gs := grpc.NewServer(opts...)
	pb.RegisterParameterServerServer(gs, newServer())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; gs.Stop() }()

	fmt.Printf("go reference server listening on %s\n", lis.Addr())
	if err := gs.Serve(lis); err != nil {
		log.Fatalf("serve: %v", err)
	}
}
