package pserver

import (
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

// stepPushes are the pushes of a SYNC step, by shard, kept by the client until the next step
// went through on every shard. A shard that failed over without the step's contributions (they
// were on the killed primary alone, or after its last checkpoint) asks for them again
// (PSERVER_RESEND_STEP), and the client sends these bytes rather than computing the step again:
// the step then closes with exactly the contributions it would have had.
type stepPushes struct {
	id stepIdentity

	mu      sync.Mutex
	byShard map[int]sentPush
}

func newStepPushes(id stepIdentity) *stepPushes {
	return &stepPushes{id: id, byShard: map[int]sentPush{}}
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

// sentTo is what trainerID's step sent to shard; false when it took no part in it there.
func (p *stepPushes) sentTo(shard int, trainerID, step uint64) (sentPush, bool) {
	if p == nil || p.id.trainerID != trainerID || p.id.step != step {
		return sentPush{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	push, ok := p.byShard[shard]
	return push, ok
}
