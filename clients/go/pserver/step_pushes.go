package pserver

import (
	"encoding/binary"
	"fmt"
	"sync"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/protobuf/proto"
)

// sentPush is one shard's push of a step, as sent.
type sentPush struct {
	dense  []*pb.Tensor
	sparse []*pb.SparseGrad
	// sampleCount is the count as sent: nil (the pserver takes 1) is not 0 (no data).
	sampleCount *uint64
}

// placement is where pushes go now: the shard count, and the tables' bucket placement.
type placement struct {
	shardCount int
	tables     *tableDirectory
}

// stepPushes are the pushes of a SYNC step, by shard, kept by the client until the next step
// went through on every shard. A shard that failed over without the step's contributions (they
// were on the killed primary alone, or after its last checkpoint, or on a primary that handed its
// shard back before the step closed) asks for them again (PSERVER_RESEND_STEP), and the client
// sends these bytes rather than computing the step again: the step then closes with exactly the
// contributions it would have had.
type stepPushes struct {
	id stepIdentity
	// shardCount is the count the step's pushes were placed under.
	shardCount int

	mu      sync.Mutex
	byShard map[int]sentPush
}

func newStepPushes(id stepIdentity, shardCount int) *stepPushes {
	return &stepPushes{id: id, shardCount: shardCount, byShard: map[int]sentPush{}}
}

// record keeps what goes to shard: dense blocks copied (they alias the trainer's slices, which it
// may reuse after the push), row gradients as they are (the client built them for this push).
func (p *stepPushes) record(shard int, push sentPush) {
	dense := make([]*pb.Tensor, len(push.dense))
	for i, t := range push.dense {
		dense[i] = proto.Clone(t).(*pb.Tensor) // a deep copy, bytes included
	}
	push.dense = dense
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byShard[shard] = push
}

// sentTo is what trainerID's step sent to what is shard under now; false when it took no part
// in it. Under the count the step ran at, the push as sent. After a change of the count, every
// block and row the step sent that shard holds now, with the step's sample count (0 when nothing
// of it lands there): the shard's slices came from several old shards, and those that counted
// the step already leave it out (the pserver's marks ahead).
func (p *stepPushes) sentTo(shard int, trainerID, step uint64, now placement) (sentPush, bool) {
	if p == nil || p.id.trainerID != trainerID || p.id.step != step {
		return sentPush{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.shardCount == p.shardCount {
		push, ok := p.byShard[shard]
		return push, ok
	}
	if len(p.byShard) == 0 {
		return sentPush{}, false
	}
	var out sentPush
	var grads []*pb.SparseGrad
	var stepCount *uint64
	for _, old := range shardsOf(p.byShard) {
		push := p.byShard[old]
		for _, t := range push.dense {
			if ShardOf(t.GetName(), now.shardCount) == shard {
				out.dense = append(out.dense, t)
			}
		}
		grads = append(grads, push.sparse...)
		// A shard the step had nothing for heard of it with a zero-sample push: not the step's count.
		carrying := len(push.dense) > 0 || len(push.sparse) > 0
		if carrying && stepCount == nil {
			stepCount = push.sampleCount
		}
	}
	out.sparse = replaceRows(grads, shard, now)
	out.sampleCount = stepCount
	if len(out.dense) == 0 && len(out.sparse) == 0 {
		none := uint64(0)
		out.sampleCount = &none
	}
	return out, true
}

// replaceRows is the rows of grads (one SparseGrad per table and old shard) that shard holds
// under now: one SparseGrad per table, tables in the order they first appear, admission counts
// kept with their rows.
func replaceRows(grads []*pb.SparseGrad, shard int, now placement) []*pb.SparseGrad {
	byTable := map[string][]*pb.SparseGrad{}
	var tables []string
	for _, grad := range grads {
		if _, seen := byTable[grad.GetTable()]; !seen {
			tables = append(tables, grad.GetTable())
		}
		byTable[grad.GetTable()] = append(byTable[grad.GetTable()], grad)
	}
	var out []*pb.SparseGrad
	for _, table := range tables {
		l, ok := now.tables.get(table)
		if !ok {
			// The client routed these rows by the layout, so it knows it.
			panic(fmt.Sprintf("stepPushes: table %s has no layout", table))
		}
		parts := byTable[table]
		var ids, rows, counts []byte
		withCounts := true
		for _, part := range parts {
			ids = append(ids, part.GetIds()...)
			rows = append(rows, part.GetGrads()...)
			counts = append(counts, part.GetCounts()...)
			withCounts = withCounts && len(part.GetCounts()) > 0
		}
		owners := now.tables.shardsOf(l, now.shardCount)
		var kept []int
		for k := 0; k < len(ids)/8; k++ {
			if int(owners[bucketOfID(binary.LittleEndian.Uint64(ids[8*k:]), l.Buckets-1)]) == shard {
				kept = append(kept, k)
			}
		}
		if len(kept) == 0 {
			continue
		}
		pick := func(from []byte, width int) []byte {
			picked := make([]byte, 0, len(kept)*width)
			for _, k := range kept {
				picked = append(picked, from[k*width:(k+1)*width]...)
			}
			return picked
		}
		grad := &pb.SparseGrad{Table: table, Ids: pick(ids, 8), Grads: pick(rows, 4*l.Dim)}
		if withCounts {
			grad.Counts = pick(counts, 4)
		}
		out = append(out, grad)
	}
	return out
}
