package pserver

import (
	"context"
	"errors"
	"strings"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// InitParams declares the model's tensors and, if this trainer is the one chosen to (the
// master's init election, or standalone unless Options.NotInitializer), writes them to the
// pservers with optimizer; other trainers wait until the parameters are initialized. An unset
// learning rate is the rule's PyTorch default (Adam and AdamW 1e-3, Adagrad and RMSProp 1e-2,
// Adadelta 1.0); plain SGD (nil or an empty config included) has none, so float tensors need
// LearningRate.Base with it, or InitParam fails with OPTIMIZER_INVALID_CONFIG. Integer tensors
// are stored, not optimized, and get no optimizer. A tensor's Shape, if given, must hold its
// elements (CLIENT_SHAPE_MISMATCH). "Already initialized" is success. Every trainer calls it with
// the same tensors.
func (c *Client) InitParams(ctx context.Context, tensors map[string]Tensor, optimizer *pb.OptimizerConfig) error {
	return c.InitParamsWith(ctx, tensors, func(string) *pb.OptimizerConfig { return optimizer })
}

// InitParamsWith is InitParams with an optimizer per tensor: configOf(name).
func (c *Client) InitParamsWith(ctx context.Context, tensors map[string]Tensor, configOf func(name string) *pb.OptimizerConfig) error {
	return c.InitParamsWithTables(ctx, tensors, configOf, nil)
}

// InitParamsWithTables is InitParamsWith with sparse tables: each spec is completed
// (CompleteTableSpec: Buckets defaults to DefaultTableBuckets) and checked before anything is
// sent, and, inside the init election, created with InitTable on every shard (a table is spread
// over all of them by bucket) before FinishInitParams. A table may not have a tensor's name (they
// share one namespace: CLIENT_UNKNOWN_TENSOR). Every trainer calls it with the same tables.
func (c *Client) InitParamsWithTables(ctx context.Context, tensors map[string]Tensor, configOf func(name string) *pb.OptimizerConfig, tables []*pb.TableSpec) error {
	completed := make([]*pb.TableSpec, len(tables))
	for i, spec := range tables {
		var err error
		if completed[i], err = CompleteTableSpec(spec); err != nil {
			return err
		}
		if _, ok := tensors[spec.GetName()]; ok {
			return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_UNKNOWN_TENSOR, nil, "table %s: a tensor has the same name (they share one namespace)", spec.GetName())
		}
	}
	for _, spec := range completed {
		c.tables.declare(layoutOf(spec))
	}
	c.mu.Lock()
	for name, t := range tensors {
		if strings.Contains(name, "@") || name == "" {
			c.mu.Unlock()
			return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_UNKNOWN_TENSOR, nil, "tensor %q: empty, or holds '@' (block names only)", name)
		}
		if err := checkShape("tensor", name, t); err != nil {
			c.mu.Unlock()
			return err
		}
		c.specs[name] = spec{elementType: t.Type, length: t.Len(), shape: t.Shape}
	}
	c.mu.Unlock()
	if c.master == nil {
		if c.opts.NotInitializer {
			return nil
		}
		return c.writeInit(ctx, tensors, configOf, completed)
	}
	for {
		var reply *pb.BeginInitResponse
		err := c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
			var err error
			reply, err = m.BeginInit(ctx, &pb.BeginInitRequest{Context: &pb.RequestContext{TrainerId: c.TrainerID()}}, o...)
			return err
		})
		if err != nil {
			return err
		}
		switch reply.GetDecision() {
		case pb.InitDecision_INIT_DECISION_DONE:
			return nil
		case pb.InitDecision_INIT_DECISION_INITIALIZE:
			if err := c.writeInit(ctx, tensors, configOf, completed); err != nil {
				return err
			}
			return c.master.call(ctx, func(ctx context.Context, m pb.MasterClient, o ...grpc.CallOption) error {
				_, err := m.FinishInit(ctx, &pb.FinishInitRequest{Context: &pb.RequestContext{TrainerId: c.TrainerID()}}, o...)
				return err
			})
		}
		// Another trainer initializes: ask again (if it dies, the master chooses another).
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// writeInit writes every block with InitParam and every table with InitTable (on every shard),
// then FinishInitParams on every shard, in one read numbered 0 (initialization is no training
// step).
func (c *Client) writeInit(ctx context.Context, tensors map[string]Tensor, configOf func(string) *pb.OptimizerConfig, tables []*pb.TableSpec) error {
	return c.read(ctx, func(s *StepContext) error {
		byShard := map[int][]*pb.InitParamRequest{}
		for name, t := range tensors {
			size := ElementSize(t.Type)
			var optimizer *pb.OptimizerConfig
			if isFloat(t.Type) {
				optimizer = configOf(name)
			}
			for _, b := range PlaceTensor(name, t.Len(), s.view.BlockSize, s.view.ShardCount) {
				byShard[b.Shard] = append(byShard[b.Shard], &pb.InitParamRequest{
					Param:     &pb.Tensor{Name: b.Name, ElementType: t.Type, Shape: t.Shape, Content: t.Data[b.Start*size : b.End*size]},
					Optimizer: optimizer,
				})
			}
		}
		err := s.eachShard(shardsOf(byShard), func(shard int) error {
			for _, req := range byShard[shard] {
				err := s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
					return ignoreAlreadyInitialized(c.calls.initParam(ctx, address, rc, req.Param, req.Optimizer))
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		all := make([]int, s.view.ShardCount)
		for i := range all {
			all[i] = i
		}
		// Every shard holds some of a table's buckets: each gets the table.
		err = s.eachShard(all, func(shard int) error {
			for _, spec := range tables {
				err := s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
					return ignoreAlreadyInitialized(c.calls.initTable(ctx, address, rc, spec))
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		return s.eachShard(all, func(shard int) error {
			return s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
				return ignoreAlreadyInitialized(c.calls.finishInitParams(ctx, address, rc))
			})
		})
	})
}

func ignoreAlreadyInitialized(err error) error {
	if errors.Is(err, ErrAlreadyInitialized) {
		return nil
	}
	return err
}

func isFloat(t pb.ElementType) bool {
	return t == pb.ElementType_ELEMENT_TYPE_FLOAT32 || t == pb.ElementType_ELEMENT_TYPE_FLOAT64
}
