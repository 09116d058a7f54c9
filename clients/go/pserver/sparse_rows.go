package pserver

import (
	"context"
	"encoding/binary"
	"math"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// distinctIDs is a batch of ids with duplicates removed: ids in order of first appearance, and
// inverse[i] the distinct index of the batch's id i.
type distinctIDs struct {
	ids     []int64
	inverse []int
}

func distinct(batch []int64) distinctIDs {
	index := make(map[int64]int, len(batch))
	out := distinctIDs{inverse: make([]int, len(batch))}
	for i, id := range batch {
		k, ok := index[id]
		if !ok {
			k = len(out.ids)
			index[id] = k
			out.ids = append(out.ids, id)
		}
		out.inverse[i] = k
	}
	return out
}

// groupByShard is the indices into ids of each shard's ids (ascending: first-appearance order),
// by shard: bucket, then the view's bucket → shard slice.
func groupByShard(ids []int64, l TableLayout, bucketShards []uint32) map[int][]int {
	groups := map[int][]int{}
	mask := l.Buckets - 1
	for k, id := range ids {
		shard := int(bucketShards[bucketOfID(uint64(id), mask)])
		groups[shard] = append(groups[shard], k)
	}
	return groups
}

// rowsPerCall is the ids per GetRows call of rows of dim values, so that a reply (dim float32s
// and a found bit per id) and a request (8 bytes per id) stay under budget bytes.
func rowsPerCall(dim, budget int) int {
	perRow := dim*4 + 1
	if perRow < 8 {
		perRow = 8
	}
	if n := (budget - replyOverheadBytes) / perRow; n > 1 {
		return n
	}
	return 1
}

// Lookup is the rows of ids in table, len(ids) × dim values row-major in the order of ids
// (duplicates included). Each distinct id is read once: the ids are grouped by shard (bucket,
// then the view's bucket → shard slice), one GetRows per shard in parallel (split into calls
// whose replies stay under half of Options.MaxMessageBytes, one after another per shard), and the
// rows scattered back. An id without a row reads what the server answers (the table's
// PullMissing: its init value by default). A table the client does not know is learned from the
// shards first (ListParams); one they do not hold either is CLIENT_UNKNOWN_TENSOR.
func (s *StepContext) Lookup(table string, ids []int64) ([]float32, error) {
	l, err := s.knowTable(table)
	if err != nil {
		return nil, err
	}
	d := distinct(ids)
	groups := groupByShard(d.ids, l, s.client.tables.shardsOf(l, s.view.ShardCount))
	rows := make([]float32, len(d.ids)*l.Dim)
	perCall := rowsPerCall(l.Dim, s.client.opts.MaxMessageBytes/2)
	err = s.eachShard(shardsOf(groups), func(shard int) error {
		indices := groups[shard]
		request := make([]byte, 8*len(indices))
		for j, k := range indices {
			binary.LittleEndian.PutUint64(request[8*j:], uint64(d.ids[k]))
		}
		for start := 0; start < len(indices); start += perCall {
			end := start + perCall
			if end > len(indices) {
				end = len(indices)
			}
			err := s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
				reply, err := s.client.calls.getRows(ctx, address, rc, table, request[8*start:8*end])
				if err != nil {
					return err
				}
				values := reply.GetValues()
				if len(values) != (end-start)*l.Dim*4 {
					return clientError(codes.Internal, pb.ErrorCode_ERROR_CODE_UNSPECIFIED, nil,
						"GetRows of table %s on shard %d: %d bytes for %d rows of dim %d", table, shard, len(values), end-start, l.Dim)
				}
				for j := start; j < end; j++ {
					row := rows[indices[j]*l.Dim:]
					from := values[(j-start)*l.Dim*4:]
					for e := 0; e < l.Dim; e++ {
						row[e] = math.Float32frombits(binary.LittleEndian.Uint32(from[4*e:]))
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.ids) == len(ids) {
		return rows, nil // distinct ids keep their order
	}
	out := make([]float32, len(ids)*l.Dim)
	for i, k := range d.inverse {
		copy(out[i*l.Dim:(i+1)*l.Dim], rows[k*l.Dim:(k+1)*l.Dim])
	}
	return out, nil
}

// PushRows adds row gradients of table to the step's push: grads holds len(ids) × dim values, row
// i for ids[i]; counts, if not nil, the occurrences of each id in the batch (the table's admission
// counts them; 1 each otherwise). Lengths are checked at once (CLIENT_SHAPE_MISMATCH); the slices
// are copied. Duplicate ids, within a call and across calls, are summed in order of first
// appearance (float32 arithmetic). The rows go out with the step's push — in the same SendGrads as
// SendGrads' dense gradients for each shard, or by themselves when the step function returns — so
// a shard applies a step's dense and sparse gradients together, once. Call it before SendGrads:
// rows given after the step's push was sent are CLIENT_STEP_FAILED.
func (s *StepContext) PushRows(table string, ids []int64, grads []float32, counts []uint32) error {
	l, err := s.knowTable(table)
	if err != nil {
		return err
	}
	if len(grads) != len(ids)*l.Dim {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
			"rows of table %s: expected %d ids × dim %d = %d values, got %d", table, len(ids), l.Dim, len(ids)*l.Dim, len(grads))
	}
	if counts != nil && len(counts) != len(ids) {
		return clientError(codes.InvalidArgument, pb.ErrorCode_CLIENT_SHAPE_MISMATCH, nil,
			"rows of table %s: expected %d counts (one per id), got %d", table, len(ids), len(counts))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pushed {
		return clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_STEP_FAILED, nil,
			"step %d: rows of table %s given after the step's push was sent (a second push of the step would be a duplicate): call PushRows before SendGrads", s.step, table)
	}
	staged := stagedRows{ids: append([]int64(nil), ids...), grads: append([]float32(nil), grads...)}
	if counts != nil {
		staged.counts = append([]uint32{}, counts...)
	}
	if s.staged == nil {
		s.staged = map[string][]stagedRows{}
		s.stagedOrder = nil
	}
	if _, ok := s.staged[table]; !ok {
		s.stagedOrder = append(s.stagedOrder, table)
	}
	s.staged[table] = append(s.staged[table], staged)
	return nil
}

// stagedRows are row gradients as PushRows was given them, checked and copied.
type stagedRows struct {
	ids    []int64
	grads  []float32
	counts []uint32 // nil: 1 each
}

// mergedRows are a table's row gradients with one row per distinct id.
type mergedRows struct {
	ids    []int64
	grads  []float32 // len(ids) × dim: the sum of each id's rows
	counts []uint32  // occurrences per id when any call gave counts (1 for calls that did not)
}

// mergeRows merges the step's row gradients of one table: duplicate ids (within a call and across
// calls) summed in order of first appearance, each addition rounded to float32 as the pserver
// would, and their counts summed (saturating).
func mergeRows(dim int, staged []stagedRows) mergedRows {
	var all []int64
	withCounts := false
	for _, r := range staged {
		all = append(all, r.ids...)
		withCounts = withCounts || r.counts != nil
	}
	d := distinct(all)
	out := mergedRows{ids: d.ids, grads: make([]float32, len(d.ids)*dim)}
	if withCounts {
		out.counts = make([]uint32, len(d.ids))
	}
	seen := make([]bool, len(d.ids))
	i := 0
	for _, r := range staged {
		for j := range r.ids {
			k := d.inverse[i]
			i++
			to, from := out.grads[k*dim:(k+1)*dim], r.grads[j*dim:(j+1)*dim]
			if !seen[k] {
				copy(to, from)
				seen[k] = true
			} else {
				for e := range to {
					to[e] += from[e]
				}
			}
			if out.counts != nil {
				n := uint64(1)
				if r.counts != nil {
					n = uint64(r.counts[j])
				}
				if sum := uint64(out.counts[k]) + n; sum > math.MaxUint32 {
					out.counts[k] = math.MaxUint32
				} else {
					out.counts[k] = uint32(sum)
				}
			}
		}
	}
	return out
}

// sparseByShard merges each staged table's rows and splits them by shard: every shard's
// SparseGrads of the push, one per table, tables in the order they were first given.
func (s *StepContext) sparseByShard() map[int][]*pb.SparseGrad {
	out := map[int][]*pb.SparseGrad{}
	for _, table := range s.stagedOrder {
		l, _ := s.client.tables.get(table)
		merged := mergeRows(l.Dim, s.staged[table])
		groups := groupByShard(merged.ids, l, s.client.tables.shardsOf(l, s.view.ShardCount))
		for shard, grad := range sparseGradsByShard(table, merged, l.Dim, groups) {
			out[shard] = append(out[shard], grad)
		}
	}
	return out
}

// sparseGradsByShard is each shard's SparseGrad of a table's merged rows: groups (groupByShard)
// holds the indices of each shard's rows.
func sparseGradsByShard(table string, merged mergedRows, dim int, groups map[int][]int) map[int]*pb.SparseGrad {
	out := make(map[int]*pb.SparseGrad, len(groups))
	for shard, indices := range groups {
		grad := &pb.SparseGrad{Table: table, Ids: make([]byte, 8*len(indices)), Grads: make([]byte, 4*dim*len(indices))}
		if merged.counts != nil {
			grad.Counts = make([]byte, 4*len(indices))
		}
		for j, k := range indices {
			binary.LittleEndian.PutUint64(grad.Ids[8*j:], uint64(merged.ids[k]))
			for e, v := range merged.grads[k*dim : (k+1)*dim] {
				binary.LittleEndian.PutUint32(grad.Grads[4*(j*dim+e):], math.Float32bits(v))
			}
			if merged.counts != nil {
				binary.LittleEndian.PutUint32(grad.Counts[4*j:], merged.counts[k])
			}
		}
		out[shard] = grad
	}
	return out
}
