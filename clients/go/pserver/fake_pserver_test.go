package pserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakePserver is an in-memory pserver serving one shard (epoch 3) on loopback: it stores what
// InitParam writes, answers GetParams and ListParams from it, and records every call.
type fakePserver struct {
	pb.UnimplementedParameterServerServer
	// replyLimit, when set, refuses GetParams replies of more content bytes with
	// PSERVER_REPLY_TOO_LARGE, like a pserver whose limit is below the client's.
	replyLimit int

	mu         sync.Mutex
	params     map[string]*pb.Tensor
	optimizers map[string]*pb.OptimizerConfig
	gets       [][]string
	lists      int
	unary      []*pb.SendGradsRequest
	streamed   [][]*pb.SendGradsChunk
	// tables holds what InitTable created; rowGets every GetRows; calls the init calls in order.
	tables  map[string]*pb.TableSpec
	rowGets []*pb.GetRowsRequest
	calls   []string
	// pushFailures are answered to the next SendGrads calls, one each, before any is recorded.
	pushFailures []fakeFailure
	// pushReplies are answered to the next pushes, one each (then: applied).
	pushReplies []*pb.SendGradsResponse
	// resendAsks holds, by step, how many of the step's next GetParams and SendGrads calls are
	// answered PSERVER_RESEND_STEP (stamped "<method> <step> resend"), like a SYNC shard that
	// failed over without the trainer's push of the step before.
	resendAsks map[uint64]int
	// status is what GetShardStatus answers beyond the epoch (mode, version, last step).
	status *pb.GetShardStatusResponse
	// statusAsks holds the context of every GetShardStatus; stamps "<method> <step>" of the calls
	// a step makes.
	statusAsks []*pb.RequestContext
	stamps     []string
}

// fakeFailure is an error answer: a gRPC code and the pserver-error-code trailer.
type fakeFailure struct {
	code      codes.Code
	errorCode string
}

// fakeRow is what the fake answers for element e of id's row: distinct for every id and element.
func fakeRow(id int64, e int) float32 { return float32(id)*10 + float32(e) }

func newFakePserver() *fakePserver {
	return &fakePserver{params: map[string]*pb.Tensor{}, optimizers: map[string]*pb.OptimizerConfig{}, tables: map[string]*pb.TableSpec{}}
}

func (f *fakePserver) GetShardStatus(_ context.Context, req *pb.GetShardStatusRequest) (*pb.GetShardStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusAsks = append(f.statusAsks, req.GetContext())
	reply := &pb.GetShardStatusResponse{}
	if f.status != nil {
		reply = proto.Clone(f.status).(*pb.GetShardStatusResponse)
	}
	reply.ShardEpoch = 3
	return reply, nil
}

// stamp records a call's method and step; callers hold f.mu.
func (f *fakePserver) stamp(method string, rc *pb.RequestContext) {
	f.stamps = append(f.stamps, fmt.Sprintf("%s %d", method, rc.GetStep()))
}

// askResend answers a call of a step in resendAsks with PSERVER_RESEND_STEP (nil otherwise);
// callers hold f.mu.
func (f *fakePserver) askResend(ctx context.Context, method string, rc *pb.RequestContext) error {
	if f.resendAsks[rc.GetStep()] == 0 {
		return nil
	}
	f.resendAsks[rc.GetStep()]--
	f.stamps = append(f.stamps, fmt.Sprintf("%s %d resend", method, rc.GetStep()))
	_ = grpc.SetTrailer(ctx, metadata.Pairs("pserver-error-code", "PSERVER_RESEND_STEP"))
	return status.Errorf(codes.FailedPrecondition, "trainer %d: no push of step %d held, and it is open", rc.GetTrainerId(), rc.GetStep()-1)
}

// nextPushReply is the reply to a push that went through; callers hold f.mu.
func (f *fakePserver) nextPushReply() *pb.SendGradsResponse {
	if len(f.pushReplies) == 0 {
		return &pb.SendGradsResponse{Outcome: pb.PushOutcome_PUSH_OUTCOME_APPLIED}
	}
	reply := f.pushReplies[0]
	f.pushReplies = f.pushReplies[1:]
	return reply
}

func (f *fakePserver) InitParam(_ context.Context, req *pb.InitParamRequest) (*pb.InitParamResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "InitParam "+req.GetParam().GetName())
	f.stamp("InitParam", req.GetContext())
	f.params[req.GetParam().GetName()] = req.GetParam()
	f.optimizers[req.GetParam().GetName()] = req.GetOptimizer()
	return &pb.InitParamResponse{}, nil
}

func (f *fakePserver) FinishInitParams(_ context.Context, req *pb.FinishInitParamsRequest) (*pb.FinishInitParamsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "FinishInitParams")
	f.stamp("FinishInitParams", req.GetContext())
	return &pb.FinishInitParamsResponse{}, nil
}

func (f *fakePserver) InitTable(_ context.Context, req *pb.InitTableRequest) (*pb.InitTableResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "InitTable "+req.GetSpec().GetName())
	f.stamp("InitTable", req.GetContext())
	f.tables[req.GetSpec().GetName()] = req.GetSpec()
	return &pb.InitTableResponse{}, nil
}

func (f *fakePserver) GetRows(ctx context.Context, req *pb.GetRowsRequest) (*pb.GetRowsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rowGets = append(f.rowGets, req)
	f.stamp("GetRows", req.GetContext())
	spec, ok := f.tables[req.GetTable()]
	if !ok {
		_ = grpc.SetTrailer(ctx, metadata.Pairs("pserver-error-code", "PSERVER_UNKNOWN_TENSOR"))
		return nil, status.Errorf(codes.NotFound, "table %s: not held", req.GetTable())
	}
	ids := req.GetIds()
	dim := int(spec.GetDim())
	values := make([]byte, 0, len(ids)/8*dim*4)
	for i := 0; i+8 <= len(ids); i += 8 {
		id := int64(binary.LittleEndian.Uint64(ids[i:]))
		for e := 0; e < dim; e++ {
			values = binary.LittleEndian.AppendUint32(values, math.Float32bits(fakeRow(id, e)))
		}
	}
	return &pb.GetRowsResponse{ShardEpoch: 3, Values: values, Found: make([]byte, (len(ids)/8+7)/8)}, nil
}

func (f *fakePserver) GetParams(ctx context.Context, req *pb.GetParamsRequest) (*pb.GetParamsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.askResend(ctx, "GetParams", req.GetContext()); err != nil {
		return nil, err
	}
	f.gets = append(f.gets, req.GetNames())
	f.stamp("GetParams", req.GetContext())
	reply := &pb.GetParamsResponse{ShardEpoch: 3}
	bytes := 0
	for _, name := range req.GetNames() {
		p, ok := f.params[name]
		if !ok {
			_ = grpc.SetTrailer(ctx, metadata.Pairs("pserver-error-code", "PSERVER_UNKNOWN_TENSOR"))
			return nil, status.Errorf(codes.NotFound, "tensor %s: not held", name)
		}
		bytes += len(p.GetContent())
		reply.Params = append(reply.Params, p)
	}
	if f.replyLimit > 0 && bytes > f.replyLimit {
		_ = grpc.SetTrailer(ctx, metadata.Pairs("pserver-error-code", "PSERVER_REPLY_TOO_LARGE"))
		return nil, status.Errorf(codes.InvalidArgument, "a reply of %d bytes, over %d", bytes, f.replyLimit)
	}
	return reply, nil
}

func (f *fakePserver) ListParams(_ context.Context, req *pb.ListParamsRequest) (*pb.ListParamsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	f.stamp("ListParams", req.GetContext())
	reply := &pb.ListParamsResponse{ShardEpoch: 3}
	for _, spec := range f.tables {
		reply.Tables = append(reply.Tables, spec)
	}
	for name, p := range f.params {
		reply.Params = append(reply.Params, &pb.ParamSpec{
			Name: name, ElementType: p.GetElementType(), Shape: p.GetShape(),
			Elements: uint64(len(p.GetContent()) / ElementSize(p.GetElementType())), Optimizer: f.optimizers[name],
		})
	}
	return reply, nil
}

func (f *fakePserver) SendGrads(ctx context.Context, req *pb.SendGradsRequest) (*pb.SendGradsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pushFailures) > 0 {
		failure := f.pushFailures[0]
		f.pushFailures = f.pushFailures[1:]
		_ = grpc.SetTrailer(ctx, metadata.Pairs("pserver-error-code", failure.errorCode))
		return nil, status.Errorf(failure.code, "%s", failure.errorCode)
	}
	if err := f.askResend(ctx, "SendGrads", req.GetContext()); err != nil {
		return nil, err
	}
	f.unary = append(f.unary, req)
	f.stamp("SendGrads", req.GetContext())
	return f.nextPushReply(), nil
}

func (f *fakePserver) SendGradsStream(stream pb.ParameterServer_SendGradsStreamServer) error {
	var chunks []*pb.SendGradsChunk
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		chunks = append(chunks, chunk)
	}
	f.mu.Lock()
	f.streamed = append(f.streamed, chunks)
	reply := f.nextPushReply()
	f.mu.Unlock()
	return stream.SendAndClose(reply)
}

// serve runs a gRPC server for srv on loopback (with serverOptions) and returns its address.
func serve(t *testing.T, srv pb.ParameterServerServer, serverOptions ...grpc.ServerOption) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(256 << 20), grpc.MaxSendMsgSize(256 << 20)}, serverOptions...)...)
	pb.RegisterParameterServerServer(server, srv)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return listener.Addr().String()
}

// fakeClient connects a standalone client to srv with opts (a short step timeout by default).
func fakeClient(t *testing.T, srv pb.ParameterServerServer, opts Options, serverOptions ...grpc.ServerOption) *Client {
	t.Helper()
	opts.Pservers = []string{serve(t, srv, serverOptions...)}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 20 * time.Second
	}
	c, err := Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fakeCluster connects a standalone client to n fake pservers, shards 0 … n-1.
func fakeCluster(t *testing.T, n int, opts Options) ([]*fakePserver, *Client) {
	t.Helper()
	fakes := make([]*fakePserver, n)
	for i := range fakes {
		fakes[i] = newFakePserver()
	}
	return fakes, connectFakes(t, fakes, opts)
}

// connectFakes connects a standalone client to fakes (set up beforehand), shards in their order.
func connectFakes(t *testing.T, fakes []*fakePserver, opts Options) *Client {
	t.Helper()
	for _, f := range fakes {
		opts.Pservers = append(opts.Pservers, serve(t, f))
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 20 * time.Second
	}
	c, err := Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
