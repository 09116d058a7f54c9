package pserver

import pb "github.com/pserver/pserver/clients/go/pserverpb"

// ShardRoute is where one shard is served now, and under which epoch (0 while unassigned).
// Serving is false while its pserver recovers it: steps wait until it serves.
type ShardRoute struct {
	Index   int
	Address string
	Epoch   uint64
	Serving bool
}

// Consistency is how the job's shards treat pushes and reads: applied on arrival
// (ConsistencyAsync), synchronous steps (ConsistencySync: a step's pushes are averaged, a read for
// step k waits for step k − 1 to close), or bounded staleness (ConsistencySSP: a read waits until
// the slowest trainer is close enough). Its String is "async", "sync" or "ssp", as in the other
// clients.
type Consistency int

const (
	ConsistencyAsync Consistency = iota
	ConsistencySync
	ConsistencySSP
)

func (c Consistency) String() string {
	switch c {
	case ConsistencySync:
		return "sync"
	case ConsistencySSP:
		return "ssp"
	}
	return "async"
}

// consistencyOfMode maps the wire's mode; an unset mode (a pserver older than SYNC) is ASYNC.
func consistencyOfMode(mode pb.ConsistencyMode) Consistency {
	switch mode {
	case pb.ConsistencyMode_CONSISTENCY_MODE_SYNC:
		return ConsistencySync
	case pb.ConsistencyMode_CONSISTENCY_MODE_BOUNDED_STALENESS:
		return ConsistencySSP
	}
	return ConsistencyAsync
}

// View is the trainer's picture of the cluster. Views are values: a step keeps the one it began
// with while the client moves on to newer ones.
type View struct {
	ShardCount  int
	BlockSize   int
	Shards      []ShardRoute
	Revision    uint64
	Initialized bool
	// Consistency is the job's mode as the shards report it. A cluster job (through a master) is
	// ConsistencyAsync: the master keeps no rosters yet.
	Consistency Consistency
}

func viewFromProto(v *pb.ClusterView) View {
	shards := make([]ShardRoute, len(v.GetShards()))
	for i, s := range v.GetShards() {
		shards[i] = ShardRoute{Index: int(s.GetIndex()), Address: s.GetAddress(), Epoch: s.GetShardEpoch(), Serving: s.GetServing()}
	}
	return View{
		ShardCount:  int(v.GetShardCount()),
		BlockSize:   int(v.GetBlockSize()),
		Shards:      shards,
		Revision:    v.GetRevision(),
		Initialized: v.GetInitialized(),
		Consistency: consistencyOfMode(v.GetConsistency().GetMode()),
	}
}

// changedShards lists the indices whose pserver or epoch differs between two views.
func changedShards(before, after View) []int {
	var changed []int
	n := len(before.Shards)
	if len(after.Shards) > n {
		n = len(after.Shards)
	}
	for i := 0; i < n; i++ {
		var a, b ShardRoute
		if i < len(before.Shards) {
			a = before.Shards[i]
		}
		if i < len(after.Shards) {
			b = after.Shards[i]
		}
		if a.Address != b.Address || a.Epoch != b.Epoch {
			changed = append(changed, i)
		}
	}
	return changed
}

// Complete reports whether every index has a pserver serving it.
func (v View) Complete() bool {
	if v.ShardCount == 0 || len(v.Shards) != v.ShardCount {
		return false
	}
	for _, s := range v.Shards {
		if s.Address == "" || s.Epoch == 0 || !s.Serving {
			return false
		}
	}
	return true
}

// Shard is the route of shard index i, or a zero route when the view has none.
func (v View) Shard(i int) ShardRoute {
	if i < 0 || i >= len(v.Shards) {
		return ShardRoute{}
	}
	return v.Shards[i]
}
