package pserver

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/pserver/pserver/clients/go/pserverpb"
	"google.golang.org/grpc/codes"
)

// StepContext is the epoch context of one run of a training step: the view (every shard's address
// and epoch), the step's identity — the trainer id and step number it began with, and its pass —
// and a deadline. Every call made through it is stamped with them, never with live state read at
// send time, so work done under one shard epoch is never labelled with the next. A session that
// expires mid-step gives the client a new trainer id for later steps; a step that began under the
// old id keeps it on every re-run, so a shard that applied its push already answers the re-run as
// a duplicate. When the cluster's view changes, the client ends the context: its calls fail with
// a stale-view error and Step runs the step again with a fresh context and the same identity.
type StepContext struct {
	client    *Client
	view      View
	trainerID uint64
	step      uint64
	pass      uint64
	ctx       context.Context
	cancel    context.CancelFunc
	// ended holds why the client ended the context (a stale view, the client closed), if it did.
	ended atomic.Value

	mu sync.Mutex
	// staged holds the row gradients PushRows was given, by table (stagedOrder: in the order the
	// tables were first given), until the step's push takes them.
	staged      map[string][]stagedRows
	stagedOrder []string
	// pushed says the step's push went out: rows given later could not join it.
	pushed bool
	// pushedTo holds the shards the step pushed to (Skip tells only the others) and the version
	// each answered.
	pushedTo map[int]uint64
	// droppedLate says a shard answered DROPPED_LATE: its step closed without this trainer.
	droppedLate bool
	// sent holds, under SYNC, what the step sent to each shard under the view's shard count: the
	// client keeps it once the step is done (Client.lastStepPushes), for a shard that fails over
	// without it.
	sent *stepPushes
}

// PushReport is what became of a push on each shard it went to, in shard order.
type PushReport struct {
	Shards []ShardPush
}

// ShardPush is one shard's answer to a push.
type ShardPush struct {
	Shard int
	// Outcome is applied, accumulated (SYNC: held in the open step), a duplicate (a retry), or
	// dropped late (SYNC backups: the step closed without it).
	Outcome pb.PushOutcome
	// Version is the shard's version after the push (SYNC: the steps it closed).
	Version uint64
}

// PushOption is an option of SendGrads.
type PushOption func(*pushOptions)

type pushOptions struct {
	sampleCount *uint64
}

// SampleCount gives the number of examples the gradients came from: under SYNC, the push's
// weight in the step's mean (default 1). A trainer whose data ran out calls Skip instead (a count
// of 0 means "no data" and must carry no gradients).
func SampleCount(n uint64) PushOption {
	return func(o *pushOptions) { o.sampleCount = &n }
}

// stepIdentity is who a step is on every shard and every run: captured once when it begins.
type stepIdentity struct {
	trainerID, step, pass uint64
}

func newStepContext(parent context.Context, c *Client, view View, id stepIdentity, deadline time.Time) *StepContext {
	ctx, cancel := context.WithDeadline(parent, deadline)
	return &StepContext{client: c, view: view, trainerID: id.trainerID, step: id.step, pass: id.pass, ctx: ctx, cancel: cancel, sent: newStepPushes(id, view.ShardCount)}
}

// Context is the step's context: it ends at the step's deadline, or when the client ends the step.
func (s *StepContext) Context() context.Context { return s.ctx }

// View is the view the step runs under.
func (s *StepContext) View() View { return s.view }

// TrainerID is the trainer id the step began with; a re-run of the step keeps it.
func (s *StepContext) TrainerID() uint64 { return s.trainerID }

// Step is the step's number; a re-run of the step keeps it.
func (s *StepContext) Step() uint64 { return s.step }

// Pass is the dataset pass the step is stamped with.
func (s *StepContext) Pass() uint64 { return s.pass }

// Deadline is when the step must be over, all its runs and retries included.
func (s *StepContext) Deadline() time.Time {
	d, _ := s.ctx.Deadline()
	return d
}

// RequestContext is the stamp of a call to shard: the context's own view and the step's identity.
func (s *StepContext) RequestContext(shard int) *pb.RequestContext {
	return &pb.RequestContext{
		TrainerId:  s.trainerID,
		Pass:       s.pass,
		Step:       s.step,
		ShardEpoch: s.view.Shard(shard).Epoch,
	}
}

// abort ends the context with reason; calls in flight are cancelled.
func (s *StepContext) abort(reason *Error) {
	s.ended.Store(reason)
	s.cancel()
}

// SendGrads pushes the step's gradients: split into blocks and sent as one push per shard (in
// parallel), each retried with the same step until it is known applied; a retry of a push that
// was applied is acknowledged as a duplicate. Call it once per step. A gradient must fit its
// tensor (element type, element count, and its shape if it has one: CLIENT_SHAPE_MISMATCH);
// its shape is sent along and checked by the pserver too (PSERVER_SHAPE_MISMATCH). A tensor the
// client does not know yet is learned from the shards first (ListParams). The rows PushRows
// staged go out in the same push, a shard's dense and sparse gradients in one SendGrads. With
// Options.GlobalClipNorm, the gradients are clipped by their global norm first. The report says
// what became of the push on each shard.
func (s *StepContext) SendGrads(grads map[string]Tensor, opts ...PushOption) (PushReport, error) {
	var o pushOptions
	for _, opt := range opts {
		opt(&o)
	}
	byShard := map[int][]*pb.Tensor{}
	names := make([]string, 0, len(grads))
	for name := range grads {
		names = append(names, name)
	}
	sort.Strings(names)
	if err := s.learnUnknown(names); err != nil {
		return PushReport{}, err
	}
	specs := make(map[string]spec, len(names))
	for _, name := range names {
		sp, err := s.client.spec(name)
		if err != nil {
			return PushReport{}, err
		}
		if err := checkGradient(name, grads[name], sp); err != nil {
			return PushReport{}, err
		}
		specs[name] = sp
	}
	if bound := s.client.opts.GlobalClipNorm; bound > 0 {
		grads = clipByGlobalNorm(grads, bound)
	}
	for _, name := range names {
		g, sp := grads[name], specs[name]
		size := ElementSize(g.Type)
		for _, b := range PlaceTensor(name, sp.length, s.view.BlockSize, s.view.ShardCount) {
			// Every block carries the whole gradient's shape: the pserver checks it against the
			// tensor's (a transposed gradient of the right count is refused, not applied).
			byShard[b.Shard] = append(byShard[b.Shard], &pb.Tensor{
				Name: b.Name, ElementType: g.Type, Shape: g.Shape, Content: g.Data[b.Start*size : b.End*size],
			})
		}
	}
	return s.push(byShard, o.sampleCount)
}

// Skip says this trainer has nothing for the step (its data ran out) to every shard of the view
// it did not push to yet: a push of no gradients and a sample count of 0. Under SYNC the step
// then closes without waiting for it and without its weight; under SSP its clock moves; under
// ASYNC nothing changes. When the step function returns, the step skips by itself under SYNC
// and SSP, so a trainer that pushed to some shards only, or to none, holds no shard up. Rows
// staged by PushRows and not sent yet cannot go with it: CLIENT_STEP_FAILED.
func (s *StepContext) Skip() (PushReport, error) {
	s.mu.Lock()
	if len(s.staged) > 0 {
		s.mu.Unlock()
		return PushReport{}, clientError(codes.FailedPrecondition, pb.ErrorCode_CLIENT_STEP_FAILED, nil, "step %d: Skip with rows staged by PushRows (a push of 0 samples carries no gradients): send them with SendGrads first", s.step)
	}
	rest := map[int][]*pb.Tensor{}
	for _, route := range s.view.Shards {
		if _, pushed := s.pushedTo[route.Index]; !pushed {
			rest[route.Index] = nil
		}
	}
	s.mu.Unlock()
	none := uint64(0)
	return s.push(rest, &none)
}

// push is the step's push: per shard one SendGrads with its dense blocks and the staged row
// gradients of its buckets (one SparseGrad per table), in parallel, each retried until known
// applied. Every shard that is a key of dense is pushed to, with no gradients if it has none.
func (s *StepContext) push(dense map[int][]*pb.Tensor, sampleCount *uint64) (PushReport, error) {
	s.mu.Lock()
	sparse := s.sparseByShard()
	s.staged, s.stagedOrder = nil, nil
	shards := map[int]bool{}
	for shard := range dense {
		shards[shard] = true
	}
	for shard := range sparse {
		shards[shard] = true
	}
	if len(shards) > 0 {
		s.pushed = true
	}
	if s.pushedTo == nil {
		s.pushedTo = map[int]uint64{}
	}
	for shard := range shards {
		s.pushedTo[shard] = 0
	}
	s.mu.Unlock()
	order := shardsOf(shards)
	if s.view.Consistency == ConsistencySync {
		for _, shard := range order {
			s.sent.record(shard, sentPush{dense: dense[shard], sparse: sparse[shard], sampleCount: sampleCount})
		}
	}
	report := PushReport{Shards: make([]ShardPush, len(order))}
	err := s.eachShard(order, func(shard int) error {
		return s.withRetries(shard, func(ctx context.Context, address string, rc *pb.RequestContext) error {
			reply, err := s.client.calls.sendGrads(ctx, address, rc, dense[shard], sparse[shard], sampleCount)
			if err != nil {
				return err
			}
			s.mu.Lock()
			s.pushedTo[shard] = reply.GetVersion()
			if reply.GetOutcome() == pb.PushOutcome_PUSH_OUTCOME_DROPPED_LATE {
				s.droppedLate = true
			}
			s.mu.Unlock()
			// Each goroutine writes its own slot.
			report.Shards[sort.SearchInts(order, shard)] = ShardPush{Shard: shard, Outcome: reply.GetOutcome(), Version: reply.GetVersion()}
			return nil
		})
	})
	if err != nil {
		return PushReport{}, err
	}
	return report, nil
}

// flush, when the step function returned, sends the rows PushRows staged if SendGrads did not,
// then under SYNC and SSP skips the shards the step did not push to, so that none waits for
// this trainer. Reads and initialization (step 0) are no step of the trainer's.
func (s *StepContext) flush() error {
	s.mu.Lock()
	pending := len(s.staged) > 0 && !s.pushed
	s.mu.Unlock()
	if pending {
		if _, err := s.push(nil, nil); err != nil {
			return err
		}
	}
	if s.view.Consistency == ConsistencyAsync || s.step == 0 {
		return nil
	}
	if _, err := s.Skip(); err != nil {
		return err
	}
	// A late trainer goes on at the first step some shard still waits for: never past one that
	// has not closed yet (a shard restored behind the job answers late while the others still
	// wait for this trainer's next steps).
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.droppedLate && len(s.pushedTo) == len(s.view.Shards) {
		least := uint64(math.MaxUint64)
		for _, version := range s.pushedTo {
			if version < least {
				least = version
			}
		}
		s.client.stepClosedWithout(least)
	}
	return nil
}

// eachShard runs fn for every shard in parallel and returns the first error.
func (s *StepContext) eachShard(shards []int, fn func(shard int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, shard := range shards {
		wg.Add(1)
		go func(shard int) {
			defer wg.Done()
			if err := fn(shard); err != nil {
				once.Do(func() { first = err })
			}
		}(shard)
	}
	wg.Wait()
	return first
}

func shardsOf[T any](m map[int]T) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// shardCall is one call to a shard, at address, stamped with rc.
type shardCall func(ctx context.Context, address string, rc *pb.RequestContext) error

// withRetries runs a call to shard, again while its outcome is unknown (connection lost,
// deadline), the pserver is busy (RESOURCE_EXHAUSTED, after its hint) or the shard is not served
// at the address for now (recovering, fenced, shutting down: until it serves or a new view ends
// the context). Retries back off with jitter and end with the step's deadline. Every attempt goes to
// the shard's address in the step's view, with the step's stamp: within one epoch the address
// does not change, and a new epoch ends the step instead. A SYNC shard that failed over without
// this trainer's last step asks for it (PSERVER_RESEND_STEP): it is sent again, then the call.
func (s *StepContext) withRetries(shard int, call shardCall) error {
	return s.retrying(shard, true, call)
}

// retrying is withRetries; resend says whether a PSERVER_RESEND_STEP answer is served (not for
// the re-send itself).
func (s *StepContext) retrying(shard int, resend bool, call shardCall) error {
	resent := false
	for attempt := 0; ; attempt++ {
		if err := s.checkFresh(shard); err != nil {
			return err
		}
		err := call(s.ctx, s.view.Shard(shard).Address, s.RequestContext(shard))
		if err == nil {
			return nil
		}
		if s.ctx.Err() != nil {
			return s.endedError(err)
		}
		if IsStale(err) {
			var e *Error
			if errors.As(err, &e) {
				s.client.staleShard(shard, e.ShardEpoch)
			}
			return err
		}
		// Asked once per call: the shard holds the step from then on, and a second ask is an
		// error of the shard's.
		if resend && !resent && s.step > 0 && IsResendStep(err) {
			resent = true
			if err := s.resendLastStep(shard); err != nil {
				return err
			}
			continue
		}
		if !IsRetryable(err) && !IsShardUnavailable(err) {
			return err
		}
		pause := backoff(attempt)
		var e *Error
		if errors.As(err, &e) && e.RetryAfterMs > 0 {
			pause = time.Duration(e.RetryAfterMs) * time.Millisecond
		}
		if sleep(s.ctx, pause) != nil {
			return s.endedError(err)
		}
	}
}

// resendLastStep sends this trainer's push of the step before to shard again — the shard failed
// over without it and asked (PSERVER_RESEND_STEP) — with what the client kept (placed anew if the
// shard count changed since), under the identity that step had and the shard's epoch in this
// step's view. A trainer that took no part in that step there (it joined after, or has a new id)
// says so with a zero-sample push. Its outcome (accumulated, duplicate, dropped late) is no part
// of this step's report.
func (s *StepContext) resendLastStep(shard int) error {
	step := s.step - 1
	kept := s.client.lastStep()
	push, ok := kept.sentTo(shard, s.trainerID, step, placement{shardCount: s.view.ShardCount, tables: s.client.tables})
	pass := s.pass
	if ok {
		pass = kept.id.pass
	} else {
		none := uint64(0)
		push = sentPush{sampleCount: &none}
	}
	return s.retrying(shard, false, func(ctx context.Context, address string, rc *pb.RequestContext) error {
		rc.Step, rc.Pass = step, pass
		_, err := s.client.calls.sendGrads(ctx, address, rc, push.dense, push.sparse, push.sampleCount)
		return err
	})
}

// checkFresh fails when the context ended or the live view moved shard's epoch since the step
// began: the step must run again.
func (s *StepContext) checkFresh(shard int) error {
	if s.ctx.Err() != nil {
		return s.endedError(nil)
	}
	mine, live := s.view.Shard(shard), s.client.View().Shard(shard)
	if mine.Epoch == 0 || live.Epoch != mine.Epoch || live.Address != mine.Address {
		return clientError(codes.Aborted, pb.ErrorCode_CLIENT_STALE_VIEW, nil, "shard %d: the view changed since step %d began", shard, s.step)
	}
	return nil
}

// endedError says why a call ended with the context: the client's reason (a stale view, closed),
// the step's deadline, or the caller's own context.
func (s *StepContext) endedError(cause error) error {
	if reason, ok := s.ended.Load().(*Error); ok {
		return &Error{Code: reason.Code, ErrorCode: reason.ErrorCode, Message: reason.Message, cause: cause}
	}
	if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		return clientError(codes.DeadlineExceeded, pb.ErrorCode_CLIENT_DEADLINE_EXCEEDED, cause, "step %d: not done by its deadline", s.step)
	}
	if cause != nil {
		return cause
	}
	return s.ctx.Err()
}

// backoff is exponential with full jitter from 50 ms, capped at 1 s so that a client waiting
// out a failover notices within about a second that the shard serves again.
func backoff(attempt int) time.Duration {
	max := 50 * time.Millisecond << uint(attempt)
	if attempt > 5 || max > time.Second {
		max = time.Second
	}
	return time.Duration(rand.Int63n(int64(max)) + 1)
}
