package pserver

import (
	"context"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// shardCalls makes the pserver calls, each with a deadline (the call timeout, capped by the
// caller's context), turning failures into *Error with their trailers' facts.
type shardCalls struct {
	conns           *connPool
	timeout         time.Duration
	maxMessageBytes int
	// streamChunkBytes is the size of the pieces a push too big for one message is streamed in.
	streamChunkBytes int
}

func (s *shardCalls) unary(ctx context.Context, address string, fn func(context.Context, pb.ParameterServerClient, ...grpc.CallOption) error) error {
	conn, err := s.conns.get(address)
	if err != nil {
		return FromError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var trailer metadata.MD
	if err := fn(ctx, pb.NewParameterServerClient(conn), grpc.Trailer(&trailer)); err != nil {
		return FromError(err, trailer)
	}
	return nil
}

// status is the shard's status; with a trainer id, also that trainer's last step on it.
func (s *shardCalls) status(ctx context.Context, address string, trainerID uint64) (reply *pb.GetShardStatusResponse, err error) {
	err = s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		req := &pb.GetShardStatusRequest{Context: &pb.RequestContext{TrainerId: trainerID}}
		reply, err = c.GetShardStatus(ctx, req, o...)
		return err
	})
	return reply, err
}

func (s *shardCalls) initParam(ctx context.Context, address string, rc *pb.RequestContext, param *pb.Tensor, optimizer *pb.OptimizerConfig) error {
	return s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		_, err := c.InitParam(ctx, &pb.InitParamRequest{Context: rc, Param: param, Optimizer: optimizer}, o...)
		return err
	})
}

func (s *shardCalls) finishInitParams(ctx context.Context, address string, rc *pb.RequestContext) error {
	return s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		_, err := c.FinishInitParams(ctx, &pb.FinishInitParamsRequest{Context: rc}, o...)
		return err
	})
}

func (s *shardCalls) getParams(ctx context.Context, address string, rc *pb.RequestContext, names []string) (reply *pb.GetParamsResponse, err error) {
	err = s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		reply, err = c.GetParams(ctx, &pb.GetParamsRequest{Context: rc, Names: names}, o...)
		return err
	})
	return reply, err
}

func (s *shardCalls) listParams(ctx context.Context, address string, rc *pb.RequestContext) (reply *pb.ListParamsResponse, err error) {
	err = s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		reply, err = c.ListParams(ctx, &pb.ListParamsRequest{Context: rc}, o...)
		return err
	})
	return reply, err
}

// sendGrads makes one push, dense and row gradients together: unary when it fits in a message,
// else streamed in pieces (which the pserver applies all or nothing when the stream is
// half-closed). sampleCount, when not nil, is the push's weight in a SYNC step (0: a step
// without data, and then no gradients).
func (s *shardCalls) sendGrads(ctx context.Context, address string, rc *pb.RequestContext, grads []*pb.Tensor, sparse []*pb.SparseGrad, sampleCount *uint64) (reply *pb.SendGradsResponse, err error) {
	bytes := 1024
	for _, g := range grads {
		bytes += len(g.Content) + len(g.Name) + 16*len(g.Shape) + 64
	}
	for _, r := range sparse {
		bytes += len(r.Ids) + len(r.Grads) + len(r.Counts) + len(r.Table) + 64
	}
	err = s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		if bytes < s.maxMessageBytes {
			reply, err = c.SendGrads(ctx, &pb.SendGradsRequest{Context: rc, Grads: grads, Sparse: sparse, SampleCount: sampleCount}, o...)
			return err
		}
		reply, err = s.stream(ctx, c, rc, grads, sparse, sampleCount, o)
		return err
	})
	return reply, err
}

func (s *shardCalls) initTable(ctx context.Context, address string, rc *pb.RequestContext, spec *pb.TableSpec) error {
	return s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		_, err := c.InitTable(ctx, &pb.InitTableRequest{Context: rc, Spec: spec}, o...)
		return err
	})
}

func (s *shardCalls) getRows(ctx context.Context, address string, rc *pb.RequestContext, table string, ids []byte) (reply *pb.GetRowsResponse, err error) {
	err = s.unary(ctx, address, func(ctx context.Context, c pb.ParameterServerClient, o ...grpc.CallOption) error {
		reply, err = c.GetRows(ctx, &pb.GetRowsRequest{Context: rc, Table: table, Ids: ids}, o...)
		return err
	})
	return reply, err
}

// chunkBytes is the content of one streamed piece: streamChunkBytes, and at most a quarter of
// the message limit, so that a piece with its header always fits.
func (s *shardCalls) chunkBytes() int {
	if n := s.maxMessageBytes / 4; n < s.streamChunkBytes {
		if n < 1 {
			return 1
		}
		return n
	}
	return s.streamChunkBytes
}

// stream sends a push as SendGradsStream: each dense gradient in pieces (the shape on its first),
// then each table's rows in slices of whole rows (the pserver concatenates a table's slices). The
// first chunk alone carries the context and the sample count.
func (s *shardCalls) stream(ctx context.Context, c pb.ParameterServerClient, rc *pb.RequestContext, grads []*pb.Tensor, sparse []*pb.SparseGrad, sampleCount *uint64, o []grpc.CallOption) (*pb.SendGradsResponse, error) {
	stream, err := c.SendGradsStream(ctx, o...)
	if err != nil {
		return nil, err
	}
	first := true
	header := func(chunk *pb.SendGradsChunk) *pb.SendGradsChunk {
		if first {
			chunk.Context, chunk.SampleCount = rc, sampleCount
			first = false
		}
		return chunk
	}
	chunkBytes := s.chunkBytes()
	for _, g := range grads {
		for offset := 0; offset < len(g.Content) || offset == 0; offset += chunkBytes {
			end := offset + chunkBytes
			if end > len(g.Content) {
				end = len(g.Content)
			}
			piece := &pb.GradientChunk{Name: g.Name, ElementType: g.ElementType, Offset: uint64(offset), Content: g.Content[offset:end]}
			if offset == 0 {
				piece.Shape = g.Shape // read from the piece at offset 0 only
			}
			if err := stream.Send(header(&pb.SendGradsChunk{Grads: []*pb.GradientChunk{piece}})); err != nil {
				// The server ended the stream: its status comes from CloseAndRecv.
				_, err = stream.CloseAndRecv()
				return nil, err
			}
			if len(g.Content) == 0 {
				break
			}
		}
	}
	for _, rows := range sparse {
		for _, slice := range rowSlices(rows, chunkBytes) {
			if err := stream.Send(header(&pb.SendGradsChunk{Sparse: []*pb.SparseGrad{slice}})); err != nil {
				_, err = stream.CloseAndRecv()
				return nil, err
			}
		}
	}
	return stream.CloseAndRecv()
}

// rowSlices cuts a table's row gradients into slices of whole rows (ids, their gradient rows and
// counts together) of about chunkBytes each.
func rowSlices(rows *pb.SparseGrad, chunkBytes int) []*pb.SparseGrad {
	n := len(rows.Ids) / 8
	if n == 0 {
		return []*pb.SparseGrad{rows}
	}
	rowBytes := len(rows.Grads) / n
	perRow := 8 + rowBytes
	if len(rows.Counts) > 0 {
		perRow += 4
	}
	step := chunkBytes / perRow
	if step < 1 {
		step = 1
	}
	var out []*pb.SparseGrad
	for start := 0; start < n; start += step {
		end := start + step
		if end > n {
			end = n
		}
		slice := &pb.SparseGrad{Table: rows.Table, Ids: rows.Ids[start*8 : end*8], Grads: rows.Grads[start*rowBytes : end*rowBytes]}
		if len(rows.Counts) > 0 {
			slice.Counts = rows.Counts[start*4 : end*4]
		}
		out = append(out, slice)
	}
	return out
}
