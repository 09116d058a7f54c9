package pserver

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// TensorInfo is one tensor of the model as the shards hold it.
type TensorInfo struct {
	// Type is its element type.
	Type pb.ElementType
	// Shape is its whole shape as InitParam gave it (empty: a flat vector).
	Shape []uint64
	// Length is its number of elements (over all its blocks).
	Length int
	// Optimizer is how gradients update it, every default filled in (the learning rate
	// included); nil for a stored-only (integer) tensor.
	Optimizer *pb.OptimizerConfig
}

// ListParams learns the model from the shards: every tensor's element type, shape, length and
// optimizer, by tensor name (ListParams on every shard, blocks put together). A process that
// never initialized (an evaluator, an exporter) can then read tensors by name; GetParams of a
// tensor the client does not know lists the model by itself. It waits, as GetParams does, until
// the parameters are initialized.
func (c *Client) ListParams(ctx context.Context) (map[string]TensorInfo, error) {
	var out map[string]TensorInfo
	err := c.read(ctx, func(s *StepContext) error {
		var err error
		out, err = s.ListParams()
		return err
	})
	return out, err
}

// ListParams is Client.ListParams in this step's context: every shard is asked under the step's
// view. The tensors learned are declared to the client (those it declared itself stay as they
// are), and so are the tables the shards hold (ListParamsResponse.tables).
func (s *StepContext) ListParams() (map[string]TensorInfo, error) {
	all := make([]int, s.view.ShardCount)
	for i := range all {
		all[i] = i
	}
	var mu sync.Mutex
	var entries []*pb.ParamSpec
	var tables []*pb.TableSpec
	err := s.eachShard(all, func(shard int) error {
		return s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
			reply, err := s.client.calls.listParams(ctx, address, rc)
			if err != nil {
				return err
			}
			mu.Lock()
			entries = append(entries, reply.GetParams()...)
			tables = append(tables, reply.GetTables()...)
			mu.Unlock()
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	model, err := assembleModel(entries, s.view.BlockSize)
	if err != nil {
		return nil, err
	}
	s.client.learn(model)
	s.client.tables.learn(tables)
	return model, nil
}

// learnUnknown lists the model when one of names is not known to the client yet.
func (s *StepContext) learnUnknown(names []string) error {
	for _, name := range names {
		if !s.client.knows(name) {
			_, err := s.ListParams()
			return err
		}
	}
	return nil
}

func (c *Client) knows(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.specs[name]
	return ok
}

// learn declares the listed tensors the client does not know yet.
func (c *Client) learn(model map[string]TensorInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, info := range model {
		if _, ok := c.specs[name]; !ok {
			c.specs[name] = spec{elementType: info.Type, length: info.Length, shape: info.Shape}
		}
	}
}

// assembleModel puts the shards' entries together into tensors: a tensor stored whole is one
// entry under its name; a larger one is blocks `<t>@0` … `<t>@k-1`, contiguous, each of
// blockSize elements but the last. Its length is the sum of its entries' elements; its type,
// shape and optimizer are any entry's (they agree). A listing that does not fit the rule (a
// missing block, another block size, entries that disagree) is an error naming the tensor.
func assembleModel(entries []*pb.ParamSpec, blockSize int) (map[string]TensorInfo, error) {
	whole := map[string]*pb.ParamSpec{}
	blocks := map[string]map[int]*pb.ParamSpec{}
	for _, e := range entries {
		name := e.GetName()
		at := strings.LastIndexByte(name, '@')
		if at < 0 {
			if whole[name] != nil {
				return nil, badListing(name, "listed twice")
			}
			whole[name] = e
			continue
		}
		tensor := name[:at]
		k, err := strconv.Atoi(name[at+1:])
		if err != nil || k < 0 || tensor == "" {
			return nil, badListing(name, "not a block name (<tensor>@<k>)")
		}
		if blocks[tensor] == nil {
			blocks[tensor] = map[int]*pb.ParamSpec{}
		}
		if blocks[tensor][k] != nil {
			return nil, badListing(name, "listed twice")
		}
		blocks[tensor][k] = e
	}
	model := map[string]TensorInfo{}
	for name, e := range whole {
		if blocks[name] != nil {
			return nil, badListing(name, "listed both whole and in blocks")
		}
		info := infoOf(e)
		info.Length = int(e.GetElements())
		if err := checkListedShape(name, info); err != nil {
			return nil, err
		}
		model[name] = info
	}
	for name, parts := range blocks {
		first := parts[0]
		if first == nil || len(parts) < 2 {
			return nil, badListing(name, fmt.Sprintf("blocks %v listed: not a split tensor (%s)", blockNumbers(parts), blockRule(blockSize)))
		}
		info := infoOf(first)
		for k := 0; k < len(parts); k++ {
			e := parts[k]
			if e == nil {
				return nil, badListing(name, fmt.Sprintf("blocks %v listed, block %d missing", blockNumbers(parts), k))
			}
			if e.GetElementType() != info.Type || !shapesEqual(e.GetShape(), info.Shape) {
				return nil, badListing(name, fmt.Sprintf("block %d is %s %s, block 0 %s %s", k, e.GetElementType(), shapeText(e.GetShape()), info.Type, shapeText(info.Shape)))
			}
			n := int(e.GetElements())
			last := k == len(parts)-1
			if (!last && n != blockSize) || (last && (n < 1 || n > blockSize)) {
				return nil, badListing(name, fmt.Sprintf("block %d holds %d elements (%s)", k, n, blockRule(blockSize)))
			}
			info.Length += n
		}
		if err := checkListedShape(name, info); err != nil {
			return nil, err
		}
		model[name] = info
	}
	return model, nil
}

func infoOf(e *pb.ParamSpec) TensorInfo {
	return TensorInfo{Type: e.GetElementType(), Shape: e.GetShape(), Optimizer: e.GetOptimizer()}
}

func checkListedShape(name string, info TensorInfo) error {
	if len(info.Shape) > 0 && product(info.Shape) != uint64(info.Length) {
		return badListing(name, fmt.Sprintf("shape %s, but %d elements listed", shapeText(info.Shape), info.Length))
	}
	return nil
}

func blockNumbers(parts map[int]*pb.ParamSpec) []int {
	out := make([]int, 0, len(parts))
	for k := range parts {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func blockRule(blockSize int) string {
	return fmt.Sprintf("the view's block size is %d: is Options.BlockSize the job's?", blockSize)
}

func badListing(name, why string) error {
	return clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_UNKNOWN_TENSOR, nil, "tensor %s: the shards' listing does not fit the placement rule: %s", name, why)
}
